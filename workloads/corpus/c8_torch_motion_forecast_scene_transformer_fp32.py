"""C8 float32 matrix products off the tensor cores (no autocast, PyTorch's default "highest"
float32 matmul precision): multi-agent motion forecasting for autonomous driving in the
Argoverse 2 setting, with a scene transformer in the style of Wayformer's early fusion and
MTR's polyline encoders, in plain PyTorch. A scene is 64 agents' 5-second histories (50
steps at 10 Hz of position, velocity, heading and a valid flag, in the focal frame) and 512
lane segments of 20 points (position, direction, lane type); 8 focal agents a scene are
forecast 6 s ahead (60 steps) in 6 modes. Agents and lanes are encoded by PointNet-style
polyline encoders (a per-point MLP of width 256, max-pooled, concatenated back and pooled
again, to d = 512), the 576 scene tokens by a 6-layer pre-LN transformer encoder (8 heads,
FFN 2,048, scaled_dot_product_attention with the invalid agents masked), and each focal
agent's 6 learned mode queries by a 4-layer decoder (self-attention over the modes,
cross-attention to the scene) into 60 x 2 offsets and a mode logit; winner-takes-all smooth-L1
on the mode closest to the ground truth (minADE) plus cross-entropy on the mode logits;
AdamW (lr 3e-4, weight decay 0.01, fused) with gradient clipping at 5 (foreach); batch 16
scenes drawn on the GPU from 1,024 synthetic scenes made there at start (curved roads and
lanes, agents driving them with a constant turn rate and acceleration, the future's turn rate
changed at t = 0); the loss stays on the GPU and is read every 50 steps.

The script sets no precision: parameters, activations and every GEMM are float32 at the
default matmul precision ("highest", TF32 off), so the step's 2.6 TFLOP (FlopCounterMode;
37.0 M parameters) run on the CUDA cores' float32 FMA units, about a seventh of the bf16
tensor-core rate or less, the scene encoder's attention in float32 too.

--fix: gpuwhy's C8 advice (mixed precision, at least TF32): the forward pass under
torch.autocast(dtype=torch.bfloat16) (the loss in float32 on its outputs, as before) and
torch.set_float32_matmul_precision("high") (TF32 for what stays float32); the parameters and
AdamW's state stay float32; model, data, loss and optimizer unchanged.

Written blind for the sierra batch.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import cc

T_HIST, T_FUT, N_AGENT, N_FOCAL, N_MODE = 50, 60, 64, 8, 6


class PolylineEncoder(nn.Module):
    """MTR's PointNet polyline encoder: per-point MLP, max-pool, concat, MLP, max-pool, out."""

    def __init__(self, cin, hidden, d):
        super().__init__()
        self.pre = nn.Sequential(nn.Linear(cin, hidden), nn.LayerNorm(hidden), nn.ReLU(),
                                 nn.Linear(hidden, hidden), nn.LayerNorm(hidden), nn.ReLU())
        self.mlp = nn.Sequential(nn.Linear(2 * hidden, hidden), nn.LayerNorm(hidden), nn.ReLU(),
                                 nn.Linear(hidden, hidden), nn.LayerNorm(hidden), nn.ReLU())
        self.out = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, d))

    def forward(self, pts, valid):                                  # (B, P, L, C), (B, P, L)
        h = self.pre(pts) * valid[..., None]
        pooled = h.max(2, keepdim=True).values.expand_as(h)
        h = self.mlp(torch.cat([h, pooled], -1)) * valid[..., None]
        return self.out(h.max(2).values)                            # (B, P, d)


class EncoderLayer(nn.Module):
    def __init__(self, d, heads, ff):
        super().__init__()
        self.heads = heads
        self.n1, self.qkv, self.proj = nn.LayerNorm(d), nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.n2, self.ff = nn.LayerNorm(d), nn.Sequential(nn.Linear(d, ff), nn.GELU(), nn.Linear(ff, d))

    def forward(self, x, mask):
        b, n, d = x.shape
        q, k, v = self.qkv(self.n1(x)).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = x + self.proj(a.transpose(1, 2).reshape(b, n, d))
        return x + self.ff(self.n2(x))


class DecoderLayer(nn.Module):
    def __init__(self, d, heads, ff):
        super().__init__()
        self.n1, self.self_attn = nn.LayerNorm(d), nn.MultiheadAttention(d, heads, batch_first=True)
        self.n2, self.cross = nn.LayerNorm(d), nn.MultiheadAttention(d, heads, batch_first=True)
        self.n3, self.ff = nn.LayerNorm(d), nn.Sequential(nn.Linear(d, ff), nn.GELU(), nn.Linear(ff, d))

    def forward(self, q, mem, mem_pad):
        h = self.n1(q)
        q = q + self.self_attn(h, h, h, need_weights=False)[0]
        q = q + self.cross(self.n2(q), mem, mem, key_padding_mask=mem_pad, need_weights=False)[0]
        return q + self.ff(self.n3(q))


class SceneTransformer(nn.Module):
    def __init__(self, d=512, heads=8, ff=2048, enc_layers=6, dec_layers=4, hidden=256):
        super().__init__()
        self.agent_enc = PolylineEncoder(7, hidden, d)
        self.lane_enc = PolylineEncoder(8, hidden, d)
        self.type_emb = nn.Parameter(torch.randn(2, d) * 0.02)
        self.enc = nn.ModuleList([EncoderLayer(d, heads, ff) for _ in range(enc_layers)])
        self.enc_norm = nn.LayerNorm(d)
        self.modes = nn.Parameter(torch.randn(N_MODE, d) * 0.02)
        self.dec = nn.ModuleList([DecoderLayer(d, heads, ff) for _ in range(dec_layers)])
        self.head = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, d), nn.GELU(), nn.Linear(d, T_FUT * 2 + 1))

    def forward(self, agents, agent_valid, lanes, lane_valid, focal):
        b = agents.shape[0]
        a = self.agent_enc(agents, agent_valid) + self.type_emb[0]
        m = self.lane_enc(lanes, lane_valid) + self.type_emb[1]
        x = torch.cat([a, m], 1)                                          # (B, 576, d)
        pad = torch.cat([~agent_valid.any(2), ~lane_valid.any(2)], 1)    # (B, 576) True = padding
        mask = ~pad[:, None, None, :]                                     # attend to valid tokens
        for layer in self.enc:
            x = layer(x, mask)
        x = self.enc_norm(x)
        fa = torch.gather(x, 1, focal[..., None].expand(-1, -1, x.shape[-1]))   # (B, F, d)
        q = (fa[:, :, None] + self.modes).reshape(b * N_FOCAL, N_MODE, -1)
        mem = x.repeat_interleave(N_FOCAL, 0)
        mem_pad = pad.repeat_interleave(N_FOCAL, 0)
        for layer in self.dec:
            q = layer(q, mem, mem_pad)
        out = self.head(q).view(b, N_FOCAL, N_MODE, -1)
        return out[..., :-1].view(b, N_FOCAL, N_MODE, T_FUT, 2), out[..., -1]


def make_scenes(n, n_lane, lane_pts, dev, seed=0):
    """n synthetic scenes in the focal frame: lanes along a few curved roads, agents driving
    them (constant turn rate and acceleration), their 5 s histories and 6 s futures."""
    g = torch.Generator(device=dev).manual_seed(seed)
    r = lambda *s: torch.rand(*s, device=dev, generator=g)             # noqa: E731
    rn = lambda *s: torch.randn(*s, device=dev, generator=g)           # noqa: E731
    # lanes: arcs with a random start, heading, curvature; 2 m spacing between points
    s = torch.arange(lane_pts, device=dev, dtype=torch.float32) * 2.0
    start = (r(n, n_lane, 1, 2) - 0.5) * 160
    head0 = r(n, n_lane, 1) * 2 * math.pi
    curv = rn(n, n_lane, 1) * 0.01
    hd = head0 + curv * s
    xy = start + torch.stack([torch.cos(hd), torch.sin(hd)], -1).cumsum(2) * 2.0
    ltype = F.one_hot(torch.randint(0, 4, (n, n_lane), device=dev, generator=g), 4).float()
    lanes = torch.cat([xy / 50, torch.cos(hd)[..., None], torch.sin(hd)[..., None],
                       ltype[:, :, None].expand(-1, -1, lane_pts, -1)], -1)
    lane_valid = (r(n, n_lane, 1) < 0.9).expand(-1, -1, lane_pts).contiguous()
    # agents: CTRA motion through the history and the future
    tt = torch.arange(-T_HIST + 1, T_FUT + 1, device=dev, dtype=torch.float32) * 0.1
    p0 = (r(n, N_AGENT, 1, 2) - 0.5) * 100
    p0[:, 0] = 0.0                                                          # the focal agent at the origin
    v0 = 3 + 12 * r(n, N_AGENT, 1)
    h0 = r(n, N_AGENT, 1) * 2 * math.pi
    h0[:, 0] = 0.0
    acc = rn(n, N_AGENT, 1) * 0.8
    w = rn(n, N_AGENT, 1) * 0.05 + (tt > 0) * rn(n, N_AGENT, 1) * 0.15       # a manoeuvre at t = 0
    hdg = h0 + w * tt
    spd = (v0 + acc * tt).clamp(min=0.0)
    vel = torch.stack([torch.cos(hdg), torch.sin(hdg)], -1) * spd[..., None]
    cs = (vel * 0.1).cumsum(2)
    pos = p0 + cs - cs[:, :, T_HIST - 1:T_HIST]                               # at p0 at t = 0
    valid = (tt[:T_HIST] > -(1 + 4 * r(n, N_AGENT, 1))) & (r(n, N_AGENT, 1) < 0.85)
    valid[:, :N_FOCAL] = True
    hist = torch.cat([pos[:, :, :T_HIST] / 50, vel[:, :, :T_HIST] / 10, torch.cos(hdg[:, :, :T_HIST, None]),
                      torch.sin(hdg[:, :, :T_HIST, None]), valid[..., None].float()], -1)
    fut = pos[:, :N_FOCAL, T_HIST:] - pos[:, :N_FOCAL, T_HIST - 1:T_HIST]        # offsets from the last position
    return hist, valid, lanes, lane_valid, fut


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        n_scene, n_lane, lane_pts, batch, d, ff, enc_l, dec_l, hidden = 32, 32, 10, 4, 64, 128, 2, 1, 32
    else:
        n_scene, n_lane, lane_pts, batch, d, ff, enc_l, dec_l, hidden = 1024, 512, 20, 16, 512, 2048, 6, 4, 256
    if args.fix:   # the advice: TF32 for what stays float32, bf16 autocast below
        torch.set_float32_matmul_precision("high")
    hist, valid, lanes, lane_valid, fut = make_scenes(n_scene, n_lane, lane_pts, dev)
    focal = torch.arange(N_FOCAL, device=dev)[None].expand(batch, -1)

    torch.manual_seed(0)
    model = SceneTransformer(d=d, heads=8, ff=ff, enc_layers=enc_l, dec_layers=dec_l, hidden=hidden).to(dev).train()
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01, fused=gpu)
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=args.fix and gpu)
    g = torch.Generator(device=dev).manual_seed(1)
    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0}

    def step(i):
        idx = torch.randint(0, n_scene, (batch,), device=dev, generator=g)
        with amp:
            traj, logit = model(hist[idx], valid[idx], lanes[idx], lane_valid[idx], focal)  # gpuwhy: plants C8 (no autocast and the default "highest" float32 matmul precision: 2.6 TFLOP a step of float32 GEMMs and attention off the tensor cores)
        traj, logit = traj.float(), logit.float()
        gt = fut[idx]                                                       # (B, F, 60, 2)
        ade = (traj - gt[:, :, None]).norm(dim=-1).mean(-1)                 # (B, F, modes)
        best = ade.argmin(-1)
        sel = torch.gather(traj, 2, best[..., None, None, None].expand(-1, -1, 1, T_FUT, 2)).squeeze(2)
        loss = F.smooth_l1_loss(sel, gt) + F.cross_entropy(logit.reshape(-1, N_MODE), best.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0, foreach=True)
        opt.step()
        st["acc"] += loss.detach()
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    cc.run("c8_torch_motion_forecast_scene_transformer_fp32", args, step, batch,
           extra=lambda: {"autocast_bf16": bool(args.fix and gpu), "matmul_precision": torch.get_float32_matmul_precision(),
                          "params_m": round(params / 1e6, 1), "scene_tokens": N_AGENT + n_lane, "loss": st["loss"],
                          "loss_reads": st["reads"]})


if __name__ == "__main__":
    main()
