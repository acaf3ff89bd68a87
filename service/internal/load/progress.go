package load

import (
	"fmt"
	"io"
	"time"
)

// showProgress prints, every o.Progress until stop is called, the requests
// done so far and the rate since the previous line.
func (r *run) showProgress(w io.Writer) (stop func()) {
	if r.o.Progress <= 0 || w == nil {
		return func() {}
	}
	stopped := make(chan struct{})
	go func() {
		tick := time.NewTicker(r.o.Progress)
		defer tick.Stop()
		last := int64(0)
		for {
			select {
			case <-stopped:
				return
			case <-tick.C:
				n := r.done.Load()
				fmt.Fprintf(w, "%6.1fs  %d requests  %.0f/s\n", time.Since(r.start).Seconds(), n, float64(n-last)/r.o.Progress.Seconds())
				last = n
			}
		}
	}()
	return func() { close(stopped) }
}
