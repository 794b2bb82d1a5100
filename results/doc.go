// Package results holds the documents moebench's commands produce (a run
// or sweep of the layer, a sizing study, a replay, a validation, native
// runs and NCCL's baseline beside them, a calibration's fit) and the
// reporters that render a document: table, JSON, CSV, plot (SVG or PNG)
// and the HTML report page.
//
// In flow the typed results of the libraries below (moe, sizing, replay,
// microbench, native/layer); out flow bytes, written by a Reporter chosen
// by its format's name (NewReporter, Render). A format is one file here
// that registers itself (Register; RegisterReplay for replay, which
// streams), in the manner of image.RegisterFormat: the command line names
// formats, never their code, and a document offers a format through the
// small interface it implements (Texter, CSVer, JSONer, Plotter, HTMLer).
// A document read back from its JSON carries what its figure and the
// report page (NewSection) draw, so plots, merge and report read
// documents rather than re-parsing rendered text; the table and CSV want
// the one computed, which also keeps what the JSON leaves out. A result
// file is read within its bound (ReadFile, MaxFileBytes).
package results
