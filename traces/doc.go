// Package traces reads, writes, imports and synthesizes routing traces: the
// top-k experts every token picked, per step, MoE layer and EP rank — the
// input that decides how many bytes DeepEP-style dispatch and combine move
// between which GPUs.
//
// In: native traces (Open, NewReader), foreign routing data (Import: NumPy
// .npy/.npz with topk_ids, vLLM/SGLang routed_experts or Megatron
// routing_indices; SGLang stat logical_count and its older CSV dump; EPLB
// weight load matrices), or a synthetic routing model (Generate). Out: a
// Reader of Records under one Header, written by NewWriter (Encode,
// EncodeFile) in either native form, and a Summary of per-layer load and
// skew (Inspect; InspectFile adds the file and host). GenOptions.CheckLayer
// refuses a synthetic trace the layer would refuse, naming the field, and
// CheckSpace one larger than the space free where it goes (SpaceError);
// OutputFormat and ImportFormat read the formats a command is told
// (ChoiceError, ErrStdoutBinary).
//
// Every reader is Scanner-shaped: Next returns one Record, reusing its
// buffers, and io.EOF at the end. Nothing is loaded whole except the arrays
// of an imported .npy/.npz (held once, at their on-disk width).
//
// # Binary form
//
// All integers little-endian; CRC-32 is IEEE.
//
//	magic    8 bytes  "\x89MOETRC\n"
//	version  uint16   1
//	reserved uint16   0
//	hlen     uint32   length of the header JSON (at most 64 MiB)
//	header   hlen bytes of JSON (the Header fields, snake_case)
//	hcrc     uint32   CRC of every byte above
//	then any number of record blocks:
//	  tag    'R'
//	  step   uint32
//	  layer  uint32
//	  rank   int32    −1 = not recorded
//	  tokens uint32
//	  k      uint16   must equal the header's top_k
//	  flags  uint16   bit 0: weights follow
//	  ids    tokens×k int32, row-major, −1 = no selection
//	  wts    tokens×k float32 when flag bit 0 is set
//	  crc    uint32   CRC of the block from its tag
//	and one end block:
//	  tag    'E'
//	  count  uint64   number of record blocks
//	  crc    uint32   CRC of tag and count
//
// A file that stops anywhere before the end of the end block, or has bytes
// after it, is an error (wrapping ErrTruncated or naming the trailing data);
// a damaged block fails its CRC (ErrChecksum). Errors name the record index
// and byte offset. A block's claimed size never drives an allocation ahead
// of the bytes that actually arrive.
//
// # JSON-lines form
//
// Line 1 is the header object with "format": "moebench-trace"; each further
// line is one record:
//
//	{"step":0,"layer":3,"rank":5,"topk_idx":[[12,7],[3,-1]],"topk_weights":[[0.75,0.25],[1,0]]}
//
// topk_weights is omitted when absent. Weights are written with the fewest
// digits that parse back to the same float32, so binary ↔ JSON lines is
// bit-exact. Errors name the line. JSON lines have no end marker: a cut at a
// line boundary goes unnoticed, so archive traces in the binary form.
//
// # Tokens from counts
//
// Per-expert counts carry no token identity or co-selection. Synthesize
// deals the counted selections into tokens so that every count is matched
// exactly and no token picks an expert twice; such traces have
// Header.Synthesized set. See Synthesize for the construction.
package traces
