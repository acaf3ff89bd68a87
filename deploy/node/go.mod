module github.com/crew-go/crew/deploy/node

go 1.26.0

require go.uber.org/goleak v1.3.0
