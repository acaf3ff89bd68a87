// Package config reads crewd's configuration from flags and CREW_*
// environment variables, flags winning, and validates it before anything
// starts.
package config
