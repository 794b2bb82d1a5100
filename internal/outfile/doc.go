// Package outfile keeps a command's outputs from harming its inputs and
// from being left half written.
//
// In: the files a command line names, each an Arg (how the command names
// it, its path), split into outputs and inputs. Check refuses, before any
// work, an output that is one of the inputs or another output, through
// links too. A Set then writes each output atomically (a temporary file
// renamed into place), or, held, prepares them all and puts them in place
// together on Commit, so that a command that fails writes none.
//
// Out: errors that name the files by what the caller called them, and
// NotWritten, the end of a failure's message that lists the outputs left
// as they were. The package never names a flag of its own.
package outfile
