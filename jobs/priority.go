package jobs

import "fmt"

// Priorities order the jobs waiting in one queue, River's way: a job of
// priority 1 waiting starts before any of priority 2 waiting, on the next
// free worker (but for the few a runner had already taken, as many as
// its free workers and pull window), and so on down to 4; jobs of one priority start about in
// the order they were submitted (a few taken by pulls in flight together
// may swap, as in a queue without priorities). The order between
// priorities is strict: a queue kept full of
// priority-1 jobs starts none of priority 4 until it drains. A program
// that must not starve its low priorities gives them a queue of their
// own, whose workers no other priority takes.
const (
	// DefaultPriority is the priority of a job whose spec names none: one
	// level above it for what must overtake the usual work, two below for
	// what may wait.
	DefaultPriority = 2
	// MaxPriority is the last priority, which starts after every other.
	MaxPriority = 4
)

// CheckPriority refuses a priority that is not 1 to MaxPriority, or 0 for
// DefaultPriority, with an *InvalidError naming "priority".
func CheckPriority(p int) error {
	if p < 0 || p > MaxPriority {
		return &InvalidError{fmt.Sprintf(`"priority" %d: want 1 (first) to %d (last), or 0 for %d`, p, MaxPriority, DefaultPriority)}
	}
	return nil
}
