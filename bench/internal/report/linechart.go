package report

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// lineCharts splits each configuration "a=1/b=2" into its last key (X)
// and the rest (one chart each).
func lineCharts(set *Set, sc *Scenario, dir string) ([]string, error) {
	ls := collectLines(set, sc)
	var files []string
	for _, g := range ls.groups {
		name := lineChartName(sc, g)
		if err := ls.draw(sc, g, set.Libs(sc.Bench), filepath.Join(dir, name)); err != nil {
			return nil, err
		}
		files = append(files, name)
	}
	return files, nil
}

type point struct{ x, y float64 }

// lineSet is what the line charts of a scenario draw: for each group of
// configurations, a line of points for each contender.
type lineSet struct {
	xName  string                        // the key on X
	groups []string                      // in the order of the configurations
	lines  map[string]map[string][]point // group -> lib -> points
}

// collectLines reads sc's medians from set, over X (per X with sc.PerX)
// and over the base's (with sc.OverBase).
func collectLines(set *Set, sc *Scenario) lineSet {
	ls := lineSet{lines: map[string]map[string][]point{}}
	for _, cfg := range set.Configs(sc.Bench) {
		group, xName, x, ok := splitConfig(cfg)
		if !ok {
			continue
		}
		ls.xName = xName
		if _, ok := ls.lines[group]; !ok {
			ls.lines[group] = map[string][]point{}
			ls.groups = append(ls.groups, group)
		}
		base, baseOK := set.Get(Key{sc.Bench, cfg, sc.Base}, sc.Unit)
		if sc.OverBase && (!baseOK || base.Median <= 0) {
			continue
		}
		for _, lib := range set.Libs(sc.Bench) {
			if st, ok := set.Get(Key{sc.Bench, cfg, lib}, sc.Unit); ok && st.Median > 0 {
				y := st.Median
				if sc.PerX {
					y /= x
				}
				if sc.OverBase {
					y /= base.Median
				}
				ls.lines[group][lib] = append(ls.lines[group][lib], point{x, y})
			}
		}
	}
	return ls
}

// splitConfig splits "a=1/b=2" into its group "a=1", and the key "b" and
// value 2 of X; false when the last part is not a key with a number.
func splitConfig(cfg string) (group, key string, x float64, ok bool) {
	group, last := "", cfg
	if i := strings.LastIndexByte(cfg, '/'); i >= 0 {
		group, last = cfg[:i], cfg[i+1:]
	}
	key, v, ok := strings.Cut(last, "=")
	if !ok {
		return "", "", 0, false
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return "", "", 0, false
	}
	return group, key, x, true
}

// draw writes group g's chart to path: both axes logarithmic, a line for
// each of libs that has points.
func (ls lineSet) draw(sc *Scenario, g string, libs []string, path string) error {
	p := plot.New()
	ls.label(p, sc, g)
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	var args []any
	xlo, xhi, ylo, yhi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, lib := range libs {
		pts := ls.lines[g][lib]
		if len(pts) == 0 {
			continue
		}
		xys := make(plotter.XYs, len(pts))
		for i, pt := range pts {
			xlo, xhi, ylo, yhi = min(xlo, pt.x), max(xhi, pt.x), min(ylo, pt.y), max(yhi, pt.y)
			xys[i] = plotter.XY{X: pt.x, Y: pt.y}
		}
		args = append(args, lib, xys)
	}
	if err := plotutil.AddLinePoints(p, args...); err != nil {
		return err
	}
	// Room for the last tick label on X and for the legend above the data.
	p.X.Min, p.X.Max = xlo/1.3, xhi*1.6
	p.Y.Min, p.Y.Max = ylo/1.3, yhi*math.Max(4, math.Pow(yhi/ylo, 0.8))
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	p.Add(plotter.NewGrid())
	return p.Save(8*vg.Inch, 6*vg.Inch, path)
}

// label sets the title and the axes' labels of group g's chart: what Y is
// (the unit, per X, or over the base) and which group.
func (ls lineSet) label(p *plot.Plot, sc *Scenario, g string) {
	p.Title.Text = fmt.Sprintf("%s %s (%s)", sc.ID, sc.Title, sc.Unit)
	if g != "" {
		p.Title.Text += ", " + g
	}
	p.X.Label.Text = ls.xName + " (log scale)"
	p.Y.Label.Text = sc.Unit + " (log scale)"
	if sc.PerX {
		p.Title.Text = fmt.Sprintf("%s %s (%s ÷ %s)", sc.ID, sc.Title, sc.Unit, ls.xName)
		p.Y.Label.Text = fmt.Sprintf("%s ÷ %s (log scale)", sc.Unit, ls.xName)
	}
	if sc.OverBase {
		p.Title.Text = fmt.Sprintf("%s %s (%s ÷ %s)", sc.ID, sc.Title, sc.Unit, sc.Base)
		p.Y.Label.Text = fmt.Sprintf("%s ÷ %s (log scale)", sc.Unit, sc.Base)
	}
}

// lineChartName is group g's file: s5-limit-10.svg for S5's limit=10.
func lineChartName(sc *Scenario, g string) string {
	name := strings.ToLower(sc.ID)
	if g != "" {
		name += "-" + strings.NewReplacer("=", "-", "/", "-").Replace(g)
	}
	return name + ".svg"
}
