package jobs_test

import (
	"testing"
	"time"

	"github.com/crew-go/crew/service/internal/jobs"
	"github.com/crew-go/crew/service/internal/jobs/jobstest"
)

func TestFactorialFitsUint64(t *testing.T) {
	if jobs.Factorial(20) != 2432902008176640000 || jobs.Factorial(0) != 1 {
		t.Fatal("factorial")
	}
	if _, err := jobstest.Factorial(21).Validate(time.Second, time.Minute); err == nil {
		t.Fatal("21! accepted: it overflows a uint64")
	}
}
