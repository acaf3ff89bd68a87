// Package prom exports a crew.Pool's metrics to Prometheus.
//
// It lives in its own module so that the crew core keeps no dependency. A
// [Collector] reads one crew.Pool.Stats snapshot per scrape, in the manner of
// client_golang's database/sql collector; a [TaskMetrics], given to the pool
// as its observer, keeps histograms of run time and queue wait by task name.
// The observer has to exist before the pool, hence three steps:
//
//	tasks, err := prom.NewTaskMetrics()
//	pool, err := crew.New(crew.WithName("api"), crew.WithObserver(tasks.Observe))
//	collector, err := prom.NewCollector(pool, prom.WithTaskMetrics(tasks))
//	prometheus.MustRegister(collector)
//
// Without the histograms, skip the first step and the observer: the pool
// then reads no clock for short tasks.
//
// The metrics, each with the label pool set to the pool's name:
//
//	crew_workers                 gauge      live worker goroutines
//	crew_workers_busy            gauge      workers running a task
//	crew_workers_max             gauge      the bound on workers
//	crew_queue_length            gauge      tasks waiting for a worker
//	crew_queue_capacity          gauge      the most tasks the queue holds
//	crew_submitters_waiting      gauge      submitters blocked for room in the queue
//	crew_tasks_submitted_total   counter    tasks submitted, accepted or refused
//	crew_tasks_total{outcome}    counter    succeeded, failed, panicked, timed_out, canceled, dropped, rejected
//	crew_task_run_seconds{task}  histogram  time task functions ran
//	crew_task_wait_seconds{task} histogram  time tasks waited in the queue
//
// The number of task label values is capped ([WithMaxTaskNames], by default
// [DefaultMaxTaskNames]); later names are counted under task="other"
// ([OtherTask]), and tasks without a name under task="".
//
// A horizontal autoscaler (KEDA, or the HPA through an adapter) scales on the
// backlog, as the goapp worker-pool article did on its waiting submitters:
//
//	sum(crew_queue_length) + sum(crew_submitters_waiting)
//
// The module's rules/crew-rules.yml records that query per job and alerts on
// a queue more than 90% full for five minutes.
package prom
