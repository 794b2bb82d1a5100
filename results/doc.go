// Package results holds the documents moebench's commands produce (a run
// or sweep of the layer, a sizing study, a replay, a validation, native
// runs and NCCL's baseline beside them) and the reporters that render a
// document: table, JSON, CSV, plot (SVG or PNG) and the HTML report page.
//
// In flow the typed results of the libraries below (moe, sizing, replay,
// microbench, native/layer); out flow bytes, written by a Reporter chosen
// by its format's name (NewReporter). A format is one file here that
// registers itself (Register), in the manner of image.RegisterFormat: the
// command line names formats, never their code. Documents read back from
// JSON (Decode) render as the ones just computed, so plots, merge and the
// report page read documents rather than re-parsing rendered text.
package results
