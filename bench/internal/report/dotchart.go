package report

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

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
