// Package release publishes crew's modules: which are published and in
// which order they are tagged (Modules), how their go.mod files get the
// release's versions (SetVersion), and a file-system module proxy built
// from the tree at a version (BuildProxy), with which the tests install
// every module the READMEs advertise exactly as a user would, without
// publishing anything.
//
// In the repository the modules require each other at the placeholder
// version v0.0.0-00010101000000-000000000000, which go.work points at the
// tree; a published go.mod carries no replace (a dependency's would be
// ignored) and requires the release's versions.
package release
