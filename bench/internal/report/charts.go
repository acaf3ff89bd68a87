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
	"gonum.org/v1/plot/vg/draw"
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

type errPoints struct {
	plotter.XYs
	plotter.YErrors
}

func dotChart(set *Set, sc *Scenario, unit, path string) error {
	libs := set.Libs(sc.Bench)
	cfgs := set.Configs(sc.Bench)
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s %s (%s, median and min..max)", sc.ID, sc.Title, unit)
	p.Y.Label.Text = unit
	lo, hi := math.Inf(1), math.Inf(-1)
	for ci, cfg := range cfgs {
		var pts errPoints
		for li, lib := range libs {
			st, ok := set.Get(Key{sc.Bench, cfg, lib}, unit)
			if !ok || st.Median <= 0 {
				continue
			}
			x := float64(li) + (float64(ci)-float64(len(cfgs)-1)/2)*0.15
			pts.XYs = append(pts.XYs, plotter.XY{X: x, Y: st.Median})
			pts.YErrors = append(pts.YErrors, struct{ Low, High float64 }{st.Median - st.Min, st.Max - st.Median})
			lo, hi = min(lo, st.Min), max(hi, st.Max)
		}
		if len(pts.XYs) == 0 {
			continue
		}
		s, err := plotter.NewScatter(pts.XYs)
		if err != nil {
			return err
		}
		s.GlyphStyle.Color = plotutil.Color(ci)
		s.GlyphStyle.Shape = plotutil.Shape(ci)
		s.GlyphStyle.Radius = vg.Points(3)
		eb, err := plotter.NewYErrorBars(pts)
		if err != nil {
			return err
		}
		eb.LineStyle.Color = plotutil.Color(ci)
		p.Add(s, eb)
		label := cfg
		if label == "" {
			label = unit
		}
		p.Legend.Add(label, s)
	}
	if hi > 0 && lo > 0 && hi/lo > 20 {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Y.Label.Text += " (log scale)"
	}
	// Headroom above the data for the legend.
	p.Y.Min, p.Y.Max = 0, hi*1.4
	if lo > 0 && hi/lo > 20 {
		p.Y.Min, p.Y.Max = lo/1.5, hi*8
	}
	p.Legend.Left = true
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	p.X.Min, p.X.Max = -0.6, float64(len(libs))-0.4
	var ticks []plot.Tick
	for i, l := range libs {
		ticks = append(ticks, plot.Tick{Value: float64(i), Label: l})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Tick.Label.Rotation = math.Pi / 4
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YCenter
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return p.Save(vg.Length(max(7, 0.6*float64(len(libs))))*vg.Inch, 5*vg.Inch, path)
}

// lineCharts splits each configuration "a=1/b=2" into its last key (X)
// and the rest (one chart each).
func lineCharts(set *Set, sc *Scenario, dir string) ([]string, error) {
	type point struct{ x, y float64 }
	groups := []string{}
	xName := ""
	lines := map[string]map[string][]point{} // group -> lib -> points
	for _, cfg := range set.Configs(sc.Bench) {
		group, last := "", cfg
		if i := strings.LastIndexByte(cfg, '/'); i >= 0 {
			group, last = cfg[:i], cfg[i+1:]
		}
		k, v, ok := strings.Cut(last, "=")
		if !ok {
			continue
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			continue
		}
		xName = k
		if _, ok := lines[group]; !ok {
			lines[group] = map[string][]point{}
			groups = append(groups, group)
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
				lines[group][lib] = append(lines[group][lib], point{x, y})
			}
		}
	}
	var files []string
	for _, g := range groups {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s %s (%s)", sc.ID, sc.Title, sc.Unit)
		if g != "" {
			p.Title.Text += ", " + g
		}
		p.X.Label.Text = xName + " (log scale)"
		p.Y.Label.Text = sc.Unit + " (log scale)"
		if sc.PerX {
			p.Title.Text = fmt.Sprintf("%s %s (%s ÷ %s)", sc.ID, sc.Title, sc.Unit, xName)
			p.Y.Label.Text = fmt.Sprintf("%s ÷ %s (log scale)", sc.Unit, xName)
		}
		if sc.OverBase {
			p.Title.Text = fmt.Sprintf("%s %s (%s ÷ %s)", sc.ID, sc.Title, sc.Unit, sc.Base)
			p.Y.Label.Text = fmt.Sprintf("%s ÷ %s (log scale)", sc.Unit, sc.Base)
		}
		p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
		p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
		var args []any
		xlo, xhi, ylo, yhi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
		for _, lib := range set.Libs(sc.Bench) {
			pts := lines[g][lib]
			if len(pts) == 0 {
				continue
			}
			for _, pt := range pts {
				xlo, xhi, ylo, yhi = min(xlo, pt.x), max(xhi, pt.x), min(ylo, pt.y), max(yhi, pt.y)
			}
			xys := make(plotter.XYs, len(pts))
			for i, pt := range pts {
				xys[i] = plotter.XY{X: pt.x, Y: pt.y}
			}
			args = append(args, lib, xys)
		}
		if err := plotutil.AddLinePoints(p, args...); err != nil {
			return nil, err
		}
		// Room for the last tick label on X and for the legend above the data.
		p.X.Min, p.X.Max = xlo/1.3, xhi*1.6
		p.Y.Min, p.Y.Max = ylo/1.3, yhi*math.Max(4, math.Pow(yhi/ylo, 0.8))
		p.Legend.Top = true
		p.Legend.Left = true
		p.Legend.TextStyle.Font.Size = vg.Points(9)
		p.Add(plotter.NewGrid())
		name := strings.ToLower(sc.ID)
		if g != "" {
			name += "-" + strings.NewReplacer("=", "-", "/", "-").Replace(g)
		}
		name += ".svg"
		if err := p.Save(8*vg.Inch, 6*vg.Inch, filepath.Join(dir, name)); err != nil {
			return nil, err
		}
		files = append(files, name)
	}
	return files, nil
}

// ExtraDotChart draws sc's results in another unit, to name.
func ExtraDotChart(set *Set, sc *Scenario, unit, dir, name string) error {
	return dotChart(set, sc, unit, filepath.Join(dir, name))
}
