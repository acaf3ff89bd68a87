package natsprom_test

import (
	"fmt"
	"slices"

	"github.com/crew-go/crew/natsjs/natsprom"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// A Source's collector is registered beside its pool's (package prom).
func ExampleNewCollector() {
	f, err := newFixture(3) // a server, a stream of 3 messages, a Source
	if err != nil {
		panic(err)
	}
	defer f.cleanup()

	collector, err := natsprom.NewCollector(f.src)
	if err != nil {
		panic(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector)

	families, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, mf := range families {
		if mf.GetName() == "natsjs_consumer_lag" {
			fmt.Println(mf.GetName(), mf.GetMetric()[0].GetGauge().GetValue())
		}
	}
	// Output: natsjs_consumer_lag 3
}

// WithoutLag leaves out the consumer's lag, and with it the request a
// scrape would send to the server.
func ExampleWithoutLag() {
	f, err := newFixture(3)
	if err != nil {
		panic(err)
	}
	defer f.cleanup()
	collector, err := natsprom.NewCollector(f.src, natsprom.WithoutLag())
	if err != nil {
		panic(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector)
	families, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	fmt.Println(len(families), "families, lag among them:", slices.ContainsFunc(families, func(mf *dto.MetricFamily) bool {
		return mf.GetName() == "natsjs_consumer_lag"
	}))
	// Output: 8 families, lag among them: false
}
