// Package preset names parameter sets over the transports: the libraries
// the paper measured (NVSHMEM IBGDA, GDAKI, NVSHMEM IBRC, NCCL GIN Proxy,
// UCCL-EP, MSCCL++, fabric-lib, DeepEP V1) as configurations of mini-gda,
// mini-proxy and dc. A preset is data with its source, not a code path: the
// transports run the same protocol logic whatever preset configured them.
package preset
