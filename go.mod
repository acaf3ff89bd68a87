module github.com/crew-go/crew

go 1.25.0

require go.uber.org/goleak v1.3.0
