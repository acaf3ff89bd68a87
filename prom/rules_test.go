package prom_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestRules checks rules/crew-rules.yml with promtool and runs its unit
// tests, rules/crew-rules.test.yml: the backlog recording rule and the
// queue-saturation alert, including that a dip below 90% restarts its five
// minutes.
func TestRules(t *testing.T) {
	promtool := requireBinary(t, "promtool")
	for _, args := range [][]string{
		{"check", "rules", "rules/crew-rules.yml"},
		{"test", "rules", "rules/crew-rules.test.yml"},
	} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "SUCCESS") {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
