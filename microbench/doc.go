// Package microbench runs the paper's mechanism microbenchmarks on the model and
// lines them up against the paper's measurements.
//
// Each experiment produces Rows: the experiment and case, the metric and
// unit, the modelled value, and, where the paper measured the same case, the
// paper's value. The paper's values are the comparison target only: no
// model figure is computed from them. Experiments are registered in order
// in Experiments and run in turn by RunAll; validate keeps every row that
// has a paper value. The posting-rate and single-operation sweeps
// (RateSweep, SingleRows; Sweep.Rows by name) take lists of each field
// and refuse a value that cannot run as a field.Error naming it; SweepOf
// says which sweep a command's names and fields ask for.
package microbench
