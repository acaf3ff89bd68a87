package memjobs_test

import (
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/jobs/jobstest"
	"github.com/crew-go/crew/jobs/memjobs"
)

func TestDeleteInMemory(t *testing.T) {
	pool, err := crew.New(crew.WithWorkers(2))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	r := &memjobs.Runner{Pool: pool, Store: memjobs.NewStore(100, time.Hour, nil, nil), Kinds: jobstest.Kinds(), DefaultTimeout: time.Second, MaxTimeout: time.Minute}
	jobstest.CheckDelete(t, r)
}
