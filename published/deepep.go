package published

import "strconv"

// Sources of DeepEP V1's published figures. The pure-RDMA low-latency table
// was replaced in the README by runs with NVLink inside the node; both
// were measured on H800 SXM hosts, one ConnectX-7 400 Gb/s InfiniBand NIC
// per GPU, eight GPUs a node.
const (
	deepepRDMA   = "deepseek-ai/DeepEP README.md @ fc48a467 (2025-06-05), \"Low-latency kernels with pure RDMA\""
	deepepNVLink = "deepseek-ai/DeepEP docs/legacy.md @ 3528514a, \"Low-latency kernels with pure RDMA\" (NVLink inside the node since de8cfca3)"
	deepepNormal = "deepseek-ai/DeepEP docs/legacy.md @ 3528514a, \"Normal kernels with NVLink and RDMA forwarding\""
)

// Profile is the platform DeepEP's suite runs on unless told otherwise.
const Profile = "p-h800"

// llRun is test_low_latency.py's setting at ep ranks: 128 tokens a rank,
// hidden 7,168, top-8, FP8 dispatch (combine is BF16), eight GPUs a node;
// experts as its test picks them (288, or a multiple of the ranks where
// 288 is not).
func llRun(ep int, nvlink bool) Conditions {
	experts := 288
	switch {
	case ep == 256:
		experts = 512
	case 288%ep != 0:
		experts = 256
	}
	return Conditions{Mode: LL, Ranks: ep, GPUsPerNode: 8, Experts: experts, TopK: 8,
		Hidden: 7168, Tokens: 128, NVLink: nvlink, DispatchDType: "fp8"}
}

// llSMs is the SMs DeepEP V1's LL kernels launched on when both LL tables
// were measured: three warp groups of ten warps an SM, one expert a
// group, cell_div(num_experts, kNumWarpGroups) SMs (csrc/kernels/
// internode_ll.cu @ ebfe47e lines 300-305 and 501-506, unchanged at
// de8cfca3; the launch follows the GPU's SMs only since 1b92be8,
// 2025-06-16). 0 where that launch does not fit the H800's 132 SMs (512
// experts at EP256): those runs used a launch the suite cannot know.
func llSMs(experts int) int {
	if sms := (experts + 2) / 3; sms <= 132 {
		return sms
	}
	return 0
}

// normalRun is DeepSeek-V3's pretraining setting that the normal-mode
// table follows, as DeepEP's tests route it: 4,096 tokens a rank, hidden
// 7,168, top-8 of 256 experts, FP8 dispatch (combine is BF16); normal
// mode always forwards over NVLink inside the node. test_internode.py's
// expert groups are its nodes, a token limited to min(nodes, 4) of them
// (group_scores = scores.view(num_tokens, num_nodes, -1), num_topk_groups
// = min(num_nodes, 4): a limit only from 8 nodes on); test_intranode.py
// takes the top-8 of all experts (torch.topk(scores, num_topk)), no group
// limit (tests/test_internode.py and test_intranode.py @ 3b1045d, whose
// runs the table quotes).
func normalRun(ep int) Conditions {
	c := Conditions{Mode: Normal, Ranks: ep, GPUsPerNode: 8, Experts: 256, TopK: 8,
		Hidden: 7168, Tokens: 4096, NVLink: true, DispatchDType: "fp8"}
	if nodes := ep / c.GPUsPerNode; nodes > 1 {
		c.TopKGroups, c.ExpertGroups = min(nodes, 4), nodes
	}
	return c
}

// DeepEP is DeepEP V1's published low-latency and normal-mode runs.
func DeepEP() Suite {
	s := Suite{Name: "deepep", Profile: Profile,
		Description: "DeepEP V1's published runs: H800 SXM, one ConnectX-7 400 Gb/s InfiniBand NIC a GPU, eight GPUs a node"}
	ll := func(exp, src string, nvlink bool, rows [][3]float64) {
		for _, r := range rows {
			ep := int(r[0])
			for i, ph := range []string{"dispatch", "combine"} {
				c := llRun(ep, nvlink)
				s.Rows = append(s.Rows, Row{Experiment: exp, Case: "EP" + strconv.Itoa(ep), Phase: ph,
					Metric: MeanUs, Value: r[1+i], Source: src, Conditions: c, NumSMs: llSMs(c.Experts)})
			}
		}
	}
	ll("ll-rdma", deepepRDMA, false, [][3]float64{
		{8, 163, 318}, {16, 173, 329}, {32, 182, 350}, {64, 186, 353}, {128, 192, 369}, {256, 194, 360},
	})
	ll("ll-nvlink", deepepNVLink, true, [][3]float64{
		{8, 77, 114}, {16, 118, 195}, {32, 155, 273}, {64, 173, 314},
	})
	for _, r := range [][3]float64{{8, 153, 158}, {16, 43, 43}, {32, 58, 57}, {64, 51, 50}} {
		ep := int(r[0])
		exp, metric := "normal-internode", DeepEPGBps
		if ep == 8 {
			// test_intranode.py prints the bytes a rank receives
			// (recv_x.numel(), its own tokens included, which never
			// cross NVLink) over the time of a cached dispatch: the
			// model's DeepEP figure on one node counts the same.
			exp = "normal-intranode"
		}
		for i, ph := range []string{"dispatch", "combine"} {
			s.Rows = append(s.Rows, Row{Experiment: exp, Case: "EP" + strconv.Itoa(ep), Phase: ph,
				Metric: metric, Value: r[1+i], Source: deepepNormal, Conditions: normalRun(ep)})
		}
	}
	return s
}
