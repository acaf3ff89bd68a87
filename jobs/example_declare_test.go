package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/crew-go/crew/jobs"
)

// Resize is a kind of job a program submits and other programs run.
type Resize struct {
	URL   string `json:"url"`
	Width int    `json:"width"`
}

func (Resize) Kind() string { return "resize" }

func (r Resize) Validate() error {
	if r.Width < 1 {
		return errors.New(`"width": want 1 or more`)
	}
	return nil
}

// A program that only submits declares its kinds by their argument types,
// without the code that runs them: its jobs are checked as a registered
// kind's are (the jsjobs example "submitOnly" submits one to workers that
// register the kind), and a declared kind runs nothing here.
func ExampleDeclare() {
	var kinds jobs.Kinds
	if err := jobs.Declare[Resize](&kinds); err != nil {
		panic(err)
	}
	_, err := kinds.Prepare(jobs.Spec{Kind: "resize", Args: []byte(`{"url":"a.png","width":0}`)}, time.Second, time.Minute)
	fmt.Println(err)
	spec, _ := jobs.NewSpec(Resize{URL: "a.png", Width: 64})
	job, err := kinds.Prepare(spec, time.Second, time.Minute)
	fmt.Println(err, kinds.Runs("resize"))
	_, err = job.Run(context.Background())
	fmt.Println(errors.Is(err, jobs.ErrNotRunHere))
	// Output:
	// invalid job: resize job: "width": want 1 or more
	// <nil> false
	// true
}
