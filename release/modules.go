package release

// Module is one module of the repository.
type Module struct {
	Path string // module path
	Dir  string // its directory, relative to the repository's root
	Tag  string // the prefix of its tags: "" for the root, else "prom/"...
}

// Placeholder is the version at which the repository's modules require
// each other between releases; go.work replaces it with the tree.
const Placeholder = "v0.0.0-00010101000000-000000000000"

// Modules are the published modules, in the order they are tagged: each
// requires only modules tagged before it.
var Modules = []Module{
	{Path: "github.com/crew-go/crew", Dir: ".", Tag: ""},
	{Path: "github.com/crew-go/crew/prom", Dir: "prom", Tag: "prom/"},
	{Path: "github.com/crew-go/crew/natsjs", Dir: "natsjs", Tag: "natsjs/"},
	{Path: "github.com/crew-go/crew/natsjs/natsprom", Dir: "natsjs/natsprom", Tag: "natsjs/natsprom/"},
	{Path: "github.com/crew-go/crew/natsjs/natsotel", Dir: "natsjs/natsotel", Tag: "natsjs/natsotel/"},
	{Path: "github.com/crew-go/crew/jobs", Dir: "jobs", Tag: "jobs/"},
	{Path: "github.com/crew-go/crew/jobs/natsd", Dir: "jobs/natsd", Tag: "jobs/natsd/"},
	{Path: "github.com/crew-go/crew/jobs/jsjobs", Dir: "jobs/jsjobs", Tag: "jobs/jsjobs/"},
	{Path: "github.com/crew-go/crew/service", Dir: "service", Tag: "service/"},
}

// Unpublished are the modules of tests and benchmarks: they are never
// tagged, and keep requiring the others at the placeholder.
var Unpublished = []Module{
	{Path: "github.com/crew-go/crew/bench", Dir: "bench"},
	{Path: "github.com/crew-go/crew/bench/jobs", Dir: "bench/jobs"},
	{Path: "github.com/crew-go/crew/natsjs/bench", Dir: "natsjs/bench"},
	{Path: "github.com/crew-go/crew/deploy/compose/clustertest", Dir: "deploy/compose/clustertest"},
	{Path: "github.com/crew-go/crew/deploy/node", Dir: "deploy/node"},
	{Path: "github.com/crew-go/crew/release", Dir: "release"},
}
