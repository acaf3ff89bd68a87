package app

import "io"

// SetTerminal makes Main take errOut for a terminal or not, until restore.
func SetTerminal(yes bool) (restore func()) {
	old := terminal
	terminal = func(io.Writer) bool { return yes }
	return func() { terminal = old }
}
