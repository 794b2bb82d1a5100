// Package preset names parameter sets over the registered transport
// mechanisms: the libraries the paper measured (NVSHMEM IBGDA, GDAKI,
// NVSHMEM IBRC, NCCL GIN Proxy, UCCL-EP, MSCCL++, fabric-lib, DeepEP V1) as
// configurations of mini-gda, mini-proxy and dc. A preset is data with its
// source, not a code path: its Config is the mechanism's own configuration
// type, and Build hands it, with knob settings and the workload's needs, to
// the mechanism. A new mechanism's presets join with Register.
package preset
