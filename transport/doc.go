// Package transport is the seam between the MoE workload and the
// mechanisms that move its bytes.
//
// A mechanism declares itself by registering a Mechanism (Register, as
// database/sql drivers do): its name, a one-line summary, its Knobs (name,
// range or choices, help, the columns the reports show them under), the
// Causes its NIC time may be attributed to, and Build, which turns a
// configuration of its own type (a preset's data) with knob Settings and
// the workload's Needs into a Transport. Optional interfaces are found by
// type assertion: a Sizer lists the configurations a sizing study tries,
// an Estimator sizes a Demand analytically (resources, a floor on the
// phase time, a class of equivalent configurations), a Holder declares
// the kinds of Resource it holds beyond QPs and connections (the reports'
// columns, how sizing weighs and limits them), and a Footprint what a
// layer on it costs the simulation (CostOf, for memory budgets).
// Packages gda (mini-gda and dc) and proxy (mini-proxy) are the built-in
// mechanisms; the workload, the sizing study and the CLI work only from
// these declarations.
//
// A Transport names itself, says its causes and its send-queue depth, and
// opens a Conn over a simulated cluster (Env: the sim engine, the profile,
// the ranks and nodes). The workload's sending warps (Warp) post Ops
// through the Conn; the Conn runs the mechanism's protocol against the hw
// models, resumes each warp when it may continue, and reports each Op's
// arrival through Env.Delivered with the Times it passed each stage (and
// the NIC time of its own causes in Times.Own), so that the workload can
// say which mechanism bound its time. After a run, Conn.Resources reports
// the queues, connections and memory it held, and its own kinds in
// Resources.Own.
package transport
