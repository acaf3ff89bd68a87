package memstore_test

import (
	"testing"
	"time"

	"github.com/crew-go/crew"
	"github.com/crew-go/crew/service/internal/jobs/jobstest"
	"github.com/crew-go/crew/service/internal/jobs/memstore"
)

func TestSubmitOnceInMemory(t *testing.T) {
	pool, err := crew.New(crew.WithWorkers(2))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	r := &memstore.Runner{Pool: pool, Store: memstore.NewStore(100, time.Hour, nil, nil), DefaultTimeout: time.Second, MaxTimeout: time.Minute}
	jobstest.CheckKeyed(t, r)
}
