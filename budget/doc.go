// Package budget keeps a command's work within the memory it may take: it
// decides, from the layers' estimated costs (moe.Cost), whether a layer
// runs with dispatch and combine side by side or in turn and how many run
// at once, and runs them through a gate that admits each while what runs
// stays within the budget.
//
// In: a Budget (bytes, 0 for no limit) and the layers' costs, or the
// points of a sweep. Out: how each runs (in turn or not, the estimate it
// runs under), or an *Exceeded error naming what was asked and what it
// would need; results of work run over the cores in index order (Indexed)
// and a Gate that admits by estimate in that order. It also reads a size
// (ParseBytes), the machine's memory and the free space of a filesystem,
// and keeps the garbage collector's goal within the budget (SoftLimit).
//
// A budget names no flag: the commands map an *Exceeded error to the
// flag that set the budget.
package budget
