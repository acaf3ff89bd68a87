package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Goal is a bound on some contenders' medians in one unit: the median
// itself, or its ratio to another contender's median in the same
// configuration (OverLib), or to the same contender's median in another
// configuration (OverConfig), at most Max(config) in every configuration
// where Max has a bound.
type Goal struct {
	Text       string // what is wanted, in words
	Libs       []string
	Unit       string
	OverLib    string
	OverConfig string
	Max        func(config string) (float64, bool)
}

// goalCell is one contender in one configuration, checked.
type goalCell struct {
	config, lib  string
	value, over  float64 // over is 0 without a denominator
	got, max     float64
	met, hasOver bool
}

// cells checks g against set's scenario bench.
func (g Goal) cells(set *Set, bench string) []goalCell {
	var out []goalCell
	for _, cfg := range set.Configs(bench) {
		max, ok := g.Max(cfg)
		if !ok {
			continue
		}
		for _, lib := range g.Libs {
			st, ok := set.Get(Key{bench, cfg, lib}, g.Unit)
			if !ok {
				continue
			}
			c := goalCell{config: cfg, lib: lib, value: st.Median, got: st.Median, max: max}
			if g.OverLib != "" || g.OverConfig != "" {
				k := Key{bench, cfg, g.OverLib}
				if g.OverConfig != "" {
					k = Key{bench, g.OverConfig, lib}
				}
				o, ok := set.Get(k, g.Unit)
				if !ok || o.Median <= 0 {
					continue
				}
				c.hasOver, c.over, c.got = true, o.Median, st.Median/o.Median
			}
			c.met = c.got <= max
			out = append(out, c)
		}
	}
	return out
}

// over names the denominator of g's ratios.
func (g Goal) over() string {
	switch {
	case g.OverConfig != "":
		return g.OverConfig
	case g.OverLib != "":
		return g.OverLib
	}
	return ""
}

func renderGoal(b *strings.Builder, set *Set, sc *Scenario, g Goal) {
	cells := g.cells(set, sc.Bench)
	if len(cells) == 0 {
		return
	}
	fmt.Fprintf(b, "**Goal: %s**\n\n", g.Text)
	if over := g.over(); over != "" {
		fmt.Fprintf(b, "| configuration | contender | %s | %s | ratio | at most | met |\n|---|---|--:|--:|--:|--:|:-:|\n", g.Unit, over)
	} else {
		fmt.Fprintf(b, "| configuration | contender | %s | at most | met |\n|---|---|--:|--:|:-:|\n", g.Unit)
	}
	met := 0
	for _, c := range cells {
		mark := "no"
		if c.met {
			mark, met = "yes", met+1
		}
		if c.hasOver {
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |\n", c.config, c.lib, Format(c.value, g.Unit), Format(c.over, g.Unit), ratio(c.got), ratio(c.max), mark)
		} else {
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", c.config, c.lib, Format(c.value, g.Unit), Format(c.max, g.Unit), mark)
		}
	}
	fmt.Fprintf(b, "\nMet in %d of %d cells.\n\n", met, len(cells))
}

// maxMissed is how many unmet cells a goal's summary names.
const maxMissed = 5

// renderGoals lists every goal of every scenario with how many of its
// cells are met, and the worst of those that are not.
func renderGoals(b *strings.Builder, set *Set, scs []*Scenario) {
	var lines []string
	for _, sc := range scs {
		for _, g := range sc.Goals {
			cells := g.cells(set, sc.Bench)
			if len(cells) == 0 {
				continue
			}
			met := 0
			var missed []goalCell
			for _, c := range cells {
				if c.met {
					met++
				} else {
					missed = append(missed, c)
				}
			}
			line := fmt.Sprintf("- %s: %s Met in %d of %d cells", sc.ID, g.Text, met, len(cells))
			if len(missed) > 0 {
				// The worst first: furthest above the bound.
				slices.SortStableFunc(missed, func(a, b goalCell) int { return cmp.Compare(b.got/b.max, a.got/a.max) })
				var worst []string
				for _, c := range missed[:min(len(missed), maxMissed)] {
					got := Format(c.got, g.Unit)
					if c.hasOver {
						got = ratio(c.got)
					}
					worst = append(worst, fmt.Sprintf("%s %s %s", c.lib, c.config, got))
				}
				line += "; not met: " + strings.Join(worst, ", ")
				if n := len(missed) - maxMissed; n > 0 {
					line += fmt.Sprintf(" and %d more", n)
				}
			}
			lines = append(lines, line+".")
		}
	}
	if len(lines) == 0 {
		return
	}
	b.WriteString("## Goals\n\n")
	b.WriteString(strings.Join(lines, "\n"))
	b.WriteString("\n\n")
}
