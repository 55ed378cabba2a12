"""The Llama decoder layer of kernel_ladder.layer written in plain PyTorch: the comparison the tests
and scripts/torch_baseline.py make. Needs PyTorch (the package itself imports without it).

torch_layer takes kernel_ladder.layer's arguments and follows include/kl/layer.h step by step, each
intermediate in the inputs' dtype (bf16 as the library stores them; float32 inputs give an fp32 run
of the same layer):
  h = rmsnorm(x) * attn_norm (fp32 math); qkv = F.linear(h, wqkv);
  rotate-half RoPE of q and k at the positions (angles in float64, then fp32 cos and sin);
  k and v written into the caches at row pos[t] of each sequence;
  o = F.scaled_dot_product_attention(q, cache rows [0, kv_len), enable_gqa=True): causal with the
    diagonal aligned to kv_len for prefill, every row visible for decode;
  r = x + F.linear(o, wo); h2 = rmsnorm(r) * mlp_norm; y = r + F.linear(silu(h2 wgate^T) * (h2 wup^T), wdown).
TorchLayer holds the weights and caches as buffers (what torch.compile's CUDA graphs need to update
the caches in place) and calls torch_layer.
"""
import torch
import torch.nn.functional as F


def rms_norm(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(x.dtype)


def rope(t, pos, theta):
    """Rotate-half RoPE of t [T, H, D] at positions pos [T]: angle = pos * theta^(-2i/D)."""
    D = t.shape[-1]
    inv_freq = torch.pow(float(theta), -torch.arange(0, D, 2, device=t.device, dtype=torch.float64) / D)
    angle = pos.to(torch.float64)[:, None] * inv_freq[None, :]
    cos = torch.cat([angle.cos(), angle.cos()], -1).float()[:, None, :]
    sin = torch.cat([angle.sin(), angle.sin()], -1).float()[:, None, :]
    tf = t.float()
    rot = torch.cat([-tf[..., D // 2:], tf[..., :D // 2]], -1)
    return (tf * cos + rot * sin).to(t.dtype)


def default_positions(B, S, kv_len, device):
    """Token s of each sequence at kv_len - S + s (the library's default for prefill), int32 [B * S]."""
    return (torch.arange(S, device=device, dtype=torch.int32) + (kv_len - S)).repeat(B)


def torch_layer(x, attn_norm, wqkv, wo, mlp_norm, wgate, wup, wdown, k_cache, v_cache, pos=None, *, mode,
                kv_len=0, eps=1e-5, theta=500000.0):
    """kernel_ladder.layer's contract in PyTorch; updates the caches' rows at the positions and
    returns y [B, S, hidden]."""
    B, S, hidden = x.shape
    Hkv, L, D = k_cache.shape[1], k_cache.shape[2], k_cache.shape[3]
    Hq = wqkv.shape[0] // D - 2 * Hkv
    T = B * S
    kv = kv_len or (S if mode == "prefill" else L)
    if pos is None:
        pos = default_positions(B, S, kv, x.device)
    pos = pos.reshape(T)

    h = rms_norm(x, attn_norm, eps)
    qkv = F.linear(h, wqkv).view(T, Hq + 2 * Hkv, D)
    q = rope(qkv[:, :Hq], pos, theta)
    k = rope(qkv[:, Hq:Hq + Hkv], pos, theta)
    v = qkv[:, Hq + Hkv:]
    seq = torch.arange(B, device=x.device).repeat_interleave(S)
    k_cache[seq, :, pos] = k  # advanced indices split by a slice: the [T] dimension comes first
    v_cache[seq, :, pos] = v
    q = q.view(B, S, Hq, D).transpose(1, 2)
    keys, values = k_cache[:, :, :kv], v_cache[:, :, :kv]
    if mode == "decode":  # the one query sees every row
        o = F.scaled_dot_product_attention(q, keys, values, enable_gqa=True)
    elif kv == S:
        o = F.scaled_dot_product_attention(q, keys, values, is_causal=True, enable_gqa=True)
    else:  # query s sees rows j <= s + kv - S
        i = torch.arange(S, device=x.device)[:, None]
        j = torch.arange(kv, device=x.device)[None, :]
        o = F.scaled_dot_product_attention(q, keys, values, attn_mask=j <= i + (kv - S), enable_gqa=True)
    o = o.transpose(1, 2).reshape(B, S, Hq * D)
    r = x + F.linear(o, wo)
    h2 = rms_norm(r, mlp_norm, eps)
    return r + F.linear(F.silu(F.linear(h2, wgate)) * F.linear(h2, wup), wdown)


class TorchLayer(torch.nn.Module):
    """torch_layer with the weights and caches as buffers: forward(x, pos) -> y."""

    def __init__(self, attn_norm, wqkv, wo, mlp_norm, wgate, wup, wdown, k_cache, v_cache, *, mode, kv_len=0,
                 eps=1e-5, theta=500000.0):
        super().__init__()
        for name, t in (("attn_norm", attn_norm), ("wqkv", wqkv), ("wo", wo), ("mlp_norm", mlp_norm),
                        ("wgate", wgate), ("wup", wup), ("wdown", wdown), ("k_cache", k_cache),
                        ("v_cache", v_cache)):
            self.register_buffer(name, t)
        self.mode, self.kv_len, self.eps, self.theta = mode, kv_len, eps, theta

    def forward(self, x, pos):
        return torch_layer(x, self.attn_norm, self.wqkv, self.wo, self.mlp_norm, self.wgate, self.wup, self.wdown,
                           self.k_cache, self.v_cache, pos, mode=self.mode, kv_len=self.kv_len, eps=self.eps,
                           theta=self.theta)
