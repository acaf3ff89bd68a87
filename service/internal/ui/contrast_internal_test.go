package ui

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestColorsReadable: every text color of the style sheet against the
// background it is drawn on reaches WCAG AA's 4.5:1, the charts' marks
// and the focus ring 3:1, in light and dark: each pair read from
// static/style.css by its rule, so a color changed there is checked.
func TestColorsReadable(t *testing.T) {
	css, err := staticFiles.ReadFile("static/style.css")
	if err != nil {
		t.Fatal(err)
	}
	light, dark, _ := strings.Cut(string(css), "@media (prefers-color-scheme: dark)")
	// color reads property prop of the rule of selector sel in sheet.
	color := func(sheet, sel, prop string) string {
		t.Helper()
		rule := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(sel) + `\s*\{([^}]*)\}`).FindStringSubmatch(sheet)
		if rule == nil {
			t.Fatalf("no rule %q", sel)
		}
		v := regexp.MustCompile(`(?:^|;)\s*` + prop + `:[^;]*?(#[0-9a-fA-F]{3,6})`).FindStringSubmatch(rule[1])
		if v == nil {
			t.Fatalf("rule %q has no %s", sel, prop)
		}
		return v[1]
	}
	const text = 4.5
	for _, c := range []struct {
		name   string
		fg, bg string
		want   float64
	}{
		{"text", color(light, "body", "color"), "#ffffff", text},
		{"a heading's note", color(light, "h1 small", "color"), "#ffffff", text},
		{"an error", color(light, ".error", "color"), "#ffffff", text},
		{"the header", color(light, "header", "color"), color(light, "header", "background"), text},
		{"code", color(light, "body", "color"), color(light, "pre", "background"), text},
		{"succeeded bars", color(light, "svg.chart .ok", "fill"), color(light, "svg.chart", "background"), 3},
		{"failed bars", color(light, "svg.chart .bad", "fill"), color(light, "svg.chart", "background"), 3},
		{"the backlog line", color(light, "svg.chart .line", "stroke"), color(light, "svg.chart", "background"), 3},
		{"the focus ring", color(light, ":focus-visible", "outline"), "#ffffff", 3},
		{"dark: text", color(dark, "body", "color"), color(dark, "body", "background"), text},
		{"dark: a link", color(dark, "a", "color"), color(dark, "body", "background"), text},
		{"dark: a heading's note", color(dark, "h1 small", "color"), color(dark, "body", "background"), text},
		{"dark: an error", color(dark, ".error", "color"), color(dark, "body", "background"), text},
		{"dark: code", color(dark, "body", "color"), color(dark, "pre, svg.chart", "background"), text},
		{"dark: a control", color(dark, "input, select, button", "color"), color(dark, "input, select, button", "background"), text},
		{"dark: succeeded bars", color(dark, "svg.chart .ok", "fill"), color(dark, "pre, svg.chart", "background"), 3},
		{"dark: failed bars", color(dark, "svg.chart .bad", "fill"), color(dark, "pre, svg.chart", "background"), 3},
		{"dark: the backlog line", color(dark, "svg.chart .line", "stroke"), color(dark, "pre, svg.chart", "background"), 3},
		{"dark: the focus ring", color(light, ":focus-visible", "outline"), color(dark, "body", "background"), 3},
	} {
		if got := contrast(c.fg, c.bg); got < c.want {
			t.Errorf("%s: %s on %s is %.2f:1, want %.1f:1 or more", c.name, c.fg, c.bg, got, c.want)
		}
	}
}

// contrast is WCAG 2's contrast ratio of two colors (#rgb or #rrggbb).
func contrast(a, b string) float64 {
	la, lb := luminance(a), luminance(b)
	return (math.Max(la, lb) + 0.05) / (math.Min(la, lb) + 0.05)
}

func luminance(hex string) float64 {
	h := strings.TrimPrefix(hex, "#")
	if len(h) == 3 {
		h = fmt.Sprintf("%c%c%c%c%c%c", h[0], h[0], h[1], h[1], h[2], h[2])
	}
	var l float64
	for i, w := range []float64{0.2126, 0.7152, 0.0722} {
		v, _ := strconv.ParseUint(h[2*i:2*i+2], 16, 8)
		c := float64(v) / 255
		if c <= 0.03928 {
			c /= 12.92
		} else {
			c = math.Pow((c+0.055)/1.055, 2.4)
		}
		l += w * c
	}
	return l
}
