package bench

import (
	"context"
	"runtime"
	"sync"

	"github.com/crew-go/crew"
	"github.com/sourcegraph/conc/iter"
	"golang.org/x/sync/errgroup"
)

// Batch is one way to compute out[i] = Elem(in[i]) for every element of a
// slice, with at most a given number of elements at once: S2's Map and
// ForEach contenders.
type Batch struct {
	Name string // key in benchmark names: lib=Name
	API  string
	new  func(workers int, in []uint64) BatchRun
}

// BatchRun is a Batch prepared for one input slice.
type BatchRun struct {
	// Run computes one batch and returns the outputs (a new slice per call
	// where the API returns one, else the same slice each time).
	Run func() []uint64
	// Close releases what the contender keeps between batches (its pool).
	Close func()
}

// New prepares b for in, with at most workers elements at once (less than
// 1: GOMAXPROCS). Pools are started here, once; Run does one batch.
func (b Batch) New(workers int, in []uint64) BatchRun {
	if workers < 1 {
		workers = runtime.GOMAXPROCS(0)
	}
	r := b.new(workers, in)
	if r.Close == nil {
		r.Close = func() {}
	}
	return r
}

// Batches lists S2's Map and ForEach contenders, the sequential loop first.
var Batches = []Batch{
	{Name: "sequential", API: "for i := range in { out[i] = Elem(in[i]) } (the baseline)", new: newSequentialBatch},
	{Name: "floor", API: "hand-split: workers long-lived goroutines, each a fixed contiguous share of the slice, signalled per batch by a channel, the caller waiting on one (the floor of any pool)", new: newFloorBatch},
	{Name: "crew-map", API: "crew.Map(ctx, pool, in, fn): a new output slice per call", new: newCrewMapBatch},
	{Name: "crew-foreach", API: "crew.ForEach(ctx, pool, indices, fn) writing out[i]", new: newCrewForEachBatch},
	{Name: "crew-go", API: "crew Pool.Go in a loop, a closure per element, + sync.WaitGroup", new: newCrewGoBatch},
	{Name: "errgroup", API: "errgroup.Group with SetLimit(workers), Go in a loop, a closure per element, + Wait (a new group per batch)", new: newErrgroupBatch},
	{Name: "conc-map", API: "conc iter.Mapper{MaxGoroutines: workers}.Map (iter.Map's default size): a new output slice per call", new: newConcMapBatch},
	{Name: "conc-foreach", API: "conc iter.Iterator{MaxGoroutines: workers}.ForEach (iter.ForEach's default size) over indices writing out[i]", new: newConcForEachBatch},
}

// LookupBatch returns the batch contender named name.
func LookupBatch(name string) (Batch, bool) {
	for _, b := range Batches {
		if b.Name == name {
			return b, true
		}
	}
	return Batch{}, false
}

func indices(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

func newSequentialBatch(_ int, in []uint64) BatchRun {
	out := make([]uint64, len(in))
	return BatchRun{Run: func() []uint64 {
		for i := range in {
			out[i] = Elem(in[i])
		}
		return out
	}}
}

// newFloorBatch is the hand-split floor: workers goroutines started once,
// each owning a fixed contiguous share of the slice; a batch is one send to
// each and one receive from each. No queue, no claiming, no allocation: no
// pool can split a batch for less.
func newFloorBatch(workers int, in []uint64) BatchRun {
	out := make([]uint64, len(in))
	workers = min(workers, len(in))
	start := make([]chan struct{}, workers)
	done := make(chan struct{}, workers)
	for w := range workers {
		start[w] = make(chan struct{})
		lo, hi := w*len(in)/workers, (w+1)*len(in)/workers
		go func() {
			for range start[w] {
				for i := lo; i < hi; i++ {
					out[i] = Elem(in[i])
				}
				done <- struct{}{}
			}
		}()
	}
	return BatchRun{
		Run: func() []uint64 {
			for _, c := range start {
				c <- struct{}{}
			}
			for range start {
				<-done
			}
			return out
		},
		Close: func() {
			for _, c := range start {
				close(c)
			}
		},
	}
}

func newCrewMapBatch(workers int, in []uint64) BatchRun {
	p := newCrewPool(Config{Workers: workers, Queue: DefaultQueue})
	fn := func(_ context.Context, x uint64) (uint64, error) { return Elem(x), nil }
	return BatchRun{
		Run: func() []uint64 {
			out, err := crew.Map(context.Background(), p, in, fn)
			if err != nil {
				panic(err)
			}
			return out
		},
		Close: func() { _ = p.Shutdown(context.Background(), crew.Drain) },
	}
}

func newCrewForEachBatch(workers int, in []uint64) BatchRun {
	p := newCrewPool(Config{Workers: workers, Queue: DefaultQueue})
	out := make([]uint64, len(in))
	idx := indices(len(in))
	fn := func(_ context.Context, i int) error {
		out[i] = Elem(in[i])
		return nil
	}
	return BatchRun{
		Run: func() []uint64 {
			if err := crew.ForEach(context.Background(), p, idx, fn); err != nil {
				panic(err)
			}
			return out
		},
		Close: func() { _ = p.Shutdown(context.Background(), crew.Drain) },
	}
}

func newCrewGoBatch(workers int, in []uint64) BatchRun {
	p := newCrewPool(Config{Workers: workers, Queue: DefaultQueue})
	out := make([]uint64, len(in))
	return BatchRun{
		Run: func() []uint64 {
			var wg sync.WaitGroup
			wg.Add(len(in))
			for i := range in {
				if err := p.Go(func() {
					out[i] = Elem(in[i])
					wg.Done()
				}); err != nil {
					panic(err)
				}
			}
			wg.Wait()
			return out
		},
		Close: func() { _ = p.Shutdown(context.Background(), crew.Drain) },
	}
}

func newErrgroupBatch(workers int, in []uint64) BatchRun {
	out := make([]uint64, len(in))
	return BatchRun{Run: func() []uint64 {
		var g errgroup.Group
		g.SetLimit(workers)
		for i := range in {
			g.Go(func() error {
				out[i] = Elem(in[i])
				return nil
			})
		}
		_ = g.Wait()
		return out
	}}
}

func newConcMapBatch(workers int, in []uint64) BatchRun {
	m := iter.Mapper[uint64, uint64]{MaxGoroutines: workers}
	fn := func(x *uint64) uint64 { return Elem(*x) }
	return BatchRun{Run: func() []uint64 { return m.Map(in, fn) }}
}

func newConcForEachBatch(workers int, in []uint64) BatchRun {
	it := iter.Iterator[int]{MaxGoroutines: workers}
	out := make([]uint64, len(in))
	idx := indices(len(in))
	fn := func(i *int) { out[*i] = Elem(in[*i]) }
	return BatchRun{Run: func() []uint64 {
		it.ForEach(idx, fn)
		return out
	}}
}
