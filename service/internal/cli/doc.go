// Package cli is crewd's command line for the jobs of a running crewd:
// crewd jobs list, get, cancel and retry, crewd queues, pause and resume,
// through its HTTP API with a token (CREW_API_TOKEN or -token-file), as a
// table for a person or as the API's JSON (-json) for a script.
package cli
