package report

import (
	"path/filepath"
	"strings"
)

// Charts draws the charts of sc into dir and returns their file names. A
// dot chart has one column per contender and one series per configuration
// (median, with min..max bars); a line chart puts the last numeric key of
// the configuration on X and has one line per contender and a chart per
// remaining configuration. The Y axis is logarithmic when the medians span
// more than a factor of 20.
func Charts(set *Set, sc *Scenario, dir string) ([]string, error) {
	switch sc.Chart {
	case LineChart:
		return lineCharts(set, sc, dir)
	default:
		name := strings.ToLower(sc.ID) + ".svg"
		if err := dotChart(set, sc, sc.Unit, filepath.Join(dir, name)); err != nil {
			return nil, err
		}
		return []string{name}, nil
	}
}

// ExtraDotChart draws sc's results in another unit, to name.
func ExtraDotChart(set *Set, sc *Scenario, unit, dir, name string) error {
	return dotChart(set, sc, unit, filepath.Join(dir, name))
}
