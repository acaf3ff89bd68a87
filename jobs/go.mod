module github.com/crew-go/crew/jobs

go 1.26.0

require (
	github.com/crew-go/crew v0.0.0-00010101000000-000000000000
	go.uber.org/goleak v1.3.0
)
