"""C10 an LSTM policy stepped one time step at a time to reset its state at episode ends (RL,
recurrent PPO on Atari): the update phase of CleanRL's ppo_atari_lstm.py (Huang et al., JMLR
2022, cleanrl/ppo_atari_lstm.py) in plain PyTorch, float32 as CleanRL trains it (cuDNN's TF32
for the convolutions, PyTorch's default): the Nature-DQN trunk on single 84 x 84 grayscale
frames (conv 8x8/4 32, 4x4/2 64, 3x3/1 64, linear 3,136 -> 512), nn.LSTM(512, 128), actor (4
actions, Breakout) and critic heads, 2.0 M parameters; at envpool scale, 32 environments x 128
steps a rollout, 4 minibatches of 8 whole environments (1,024 frames, 128 steps each) and 4
update epochs; the clipped PPO loss with normalized advantages, clipped value loss, entropy
0.01, value 0.5, gradient clipping at 0.5, Adam (lr 2.5e-4, eps 1e-5). The learner's rollout
buffer (frames, actions, log-probabilities, values, advantages, returns, done flags with an
episode end, CleanRL's life-loss EpisodicLifeEnv included, every ~40 steps, and the LSTM state
at the rollout's start) is made on the GPU at start, with the done flags also kept on the host,
where the environments returned them; one iteration here is one minibatch update, the learner
alone (the environment stepping is not part of the job). The clip fractions stay on the GPU and
are read once an update (16 minibatches), where CleanRL reads one with .item() in every
minibatch.

Planted as CleanRL writes get_states: the CNN runs over all 1,024 frames at once, but the LSTM
is called in a Python loop over the 128 time steps, nn.LSTM on a sequence of one for the 8
environments, the state multiplied by (1 - done) before each call so that it resets where an
episode ended: ~6 operations and a cuDNN RNN call a step forward (~7 kernels), the cuDNN
backward, the masks' and the weights' gradient accumulation backward (~12 kernels), ~2,400
small dependent kernels on one stream a minibatch, each of a few microseconds over 8 x 128
values, issued from Python (~15-18 ms of host time a minibatch, ~70-80 us a step forward and
~50-60 us backward, against ~1.5-2.5 ms of GPU work for the CNN, heads, loss and Adam): the
loop is ~75-85% of a plain step; the fix's one cuDNN call runs the 128 steps internally (~3 ms
of GPU time forward and backward).

--fix: gpuwhy's C10 advice (a fused RNN over the whole sequence): each environment's 128 steps
split at its episode resets into segments (from the host copy of the done flags), the segments
packed (pack_padded_sequence) and run through the same nn.LSTM in one cuDNN call, each starting
from the rollout's initial state or, after a reset, from zeros, and the outputs gathered back
into step order, the way recurrent-PPO implementations that split episodes do it (e.g.
MarcoMeter/recurrent-ppo-truncated-bptt); the same weights and the same outputs (checked equal
at start, the largest difference in the JSON line); trunk, heads, loss, data and optimizer
unchanged.

Written blind for the whiskey batch.
"""
import numpy as np
import torch
import torch.nn as nn
from torch.distributions.categorical import Categorical
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

import cc


def layer_init(layer, std=np.sqrt(2), bias_const=0.0):
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    """cleanrl/ppo_atari_lstm.py's Agent."""

    def __init__(self, n_actions, frame=84, width=1):
        super().__init__()
        c1, c2, c3, fc = 32 // width, 64 // width, 64 // width, 512 // width
        side = ((frame - 8) // 4 + 1 - 4) // 2 + 1 - 2
        self.network = nn.Sequential(
            layer_init(nn.Conv2d(1, c1, 8, stride=4)), nn.ReLU(),
            layer_init(nn.Conv2d(c1, c2, 4, stride=2)), nn.ReLU(),
            layer_init(nn.Conv2d(c2, c3, 3, stride=1)), nn.ReLU(),
            nn.Flatten(),
            layer_init(nn.Linear(c3 * side * side, fc)), nn.ReLU(),
        )
        self.lstm = nn.LSTM(fc, 128)
        for name, param in self.lstm.named_parameters():
            if "bias" in name:
                nn.init.constant_(param, 0)
            elif "weight" in name:
                nn.init.orthogonal_(param, 1.0)
        self.actor = layer_init(nn.Linear(128, n_actions), std=0.01)
        self.critic = layer_init(nn.Linear(128, 1), std=1)

    def get_states(self, x, lstm_state, done):
        hidden = self.network(x / 255.0)

        # LSTM logic
        batch_size = lstm_state[0].shape[1]
        hidden = hidden.reshape((-1, batch_size, self.lstm.input_size))
        done = done.reshape((-1, batch_size))
        new_hidden = []
        for h, d in zip(hidden, done):  # gpuwhy: plants C10 (nn.LSTM stepped one time step at a time from Python, the state reset by (1 - done))
            h, lstm_state = self.lstm(
                h.unsqueeze(0),
                (
                    (1.0 - d).view(1, -1, 1) * lstm_state[0],
                    (1.0 - d).view(1, -1, 1) * lstm_state[1],
                ),
            )
            new_hidden += [h]
        new_hidden = torch.flatten(torch.cat(new_hidden), 0, 1)
        return new_hidden, lstm_state

    def get_states_packed(self, x, lstm_state, done_host):
        """The fix: the steps between resets as packed sequences, one cuDNN call."""
        hidden = self.network(x / 255.0)
        n_env = lstm_state[0].shape[1]
        hidden = hidden.reshape((-1, self.lstm.input_size))           # (T * E) x 512, step-major
        d = done_host.reshape(-1, n_env).astype(bool)                   # T x E, on the host
        T = d.shape[0]
        starts = d.T.copy()
        starts[:, 0] = True                                             # each env's column starts a segment
        flat = np.flatnonzero(starts.ravel())                           # env-major positions e * T + t
        lengths = np.diff(np.append(flat, n_env * T))
        seg_env, seg_t0 = flat // T, flat % T
        lmax = int(lengths.max())
        off = np.arange(lmax)
        t_idx = np.minimum(seg_t0[:, None] + off[None, :], T - 1)
        gather = torch.from_numpy((t_idx * n_env + seg_env[:, None]).ravel()).to(hidden.device)
        padded = hidden[gather].view(len(flat), lmax, -1)
        # state at a segment's start: the rollout's initial one unless an episode ended there
        keep = (seg_t0 == 0) & ~d[0, seg_env]
        env_t = torch.from_numpy(seg_env).to(hidden.device)
        keep_t = torch.from_numpy(keep.astype(np.float32)).to(hidden.device).view(1, -1, 1)
        h0 = lstm_state[0][:, env_t] * keep_t
        c0 = lstm_state[1][:, env_t] * keep_t
        packed = pack_padded_sequence(padded, torch.from_numpy(lengths), batch_first=True, enforce_sorted=False)
        out, _ = self.lstm(packed, (h0, c0))
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=lmax)
        # back to step-major order: position t * E + e is offset t - t0 of its segment
        seg_of = np.cumsum(starts.ravel()) - 1                          # env-major segment id
        pos = seg_of * lmax + (np.arange(n_env * T) % T - seg_t0[seg_of])
        back = torch.from_numpy(pos.reshape(n_env, T).T.ravel()).to(hidden.device)
        return out.reshape(-1, out.shape[-1])[back], None

    def get_value(self, x, lstm_state, done):
        hidden, _ = self.get_states(x, lstm_state, done)
        return self.critic(hidden)

    def get_action_and_value(self, x, lstm_state, done, action=None, done_host=None):
        if done_host is None:
            hidden, lstm_state = self.get_states(x, lstm_state, done)
        else:
            hidden, lstm_state = self.get_states_packed(x, lstm_state, done_host)
        logits = self.actor(hidden)
        probs = Categorical(logits=logits)
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(hidden), lstm_state


def main():
    args = cc.parser(__doc__, warmup=8).parse_args()
    dev = cc.torch_device(args)
    if args.smoke:
        num_envs, num_steps, frame, width = 8, 32, 84, 4
    else:
        num_envs, num_steps, frame, width = 32, 128, 84, 1
    n_actions, num_minibatches, update_epochs = 4, 4, 4
    lr, clip_coef, ent_coef, vf_coef, max_grad_norm, p_done = 2.5e-4, 0.1, 0.01, 0.5, 0.5, 1 / 40
    batch_size = num_envs * num_steps
    envsperbatch = num_envs // num_minibatches
    torch.manual_seed(0)
    agent = Agent(n_actions, frame, width).to(dev)
    optimizer = torch.optim.Adam(agent.parameters(), lr=lr, eps=1e-5)

    # the rollout buffer as the environments left it (num_steps, num_envs, ...)
    g = torch.Generator(device=dev).manual_seed(0)
    small = torch.randint(0, 256, (num_steps, num_envs, 1, frame // 4, frame // 4), device=dev, generator=g).float()
    obs = torch.nn.functional.interpolate(small.view(-1, 1, frame // 4, frame // 4), size=(frame, frame), mode="bilinear")
    obs = obs.clamp(0, 255).to(torch.uint8).view(num_steps, num_envs, 1, frame, frame)
    rng = np.random.default_rng(0)
    dones_np = (rng.random((num_steps, num_envs)) < p_done).astype(np.float32)   # what envs.step returned
    dones = torch.from_numpy(dones_np).to(dev)
    actions = torch.randint(0, n_actions, (num_steps, num_envs), device=dev, generator=g).float()
    logprobs = -torch.rand((num_steps, num_envs), device=dev, generator=g) * 1.4
    values = torch.randn((num_steps, num_envs), device=dev, generator=g)
    advantages = torch.randn((num_steps, num_envs), device=dev, generator=g)
    returns = advantages + values
    initial_lstm_state = (torch.randn(1, num_envs, 128, device=dev, generator=g) * 0.1,
                          torch.randn(1, num_envs, 128, device=dev, generator=g) * 0.1)
    b_obs = obs.reshape((-1, 1, frame, frame))
    b_logprobs, b_actions, b_dones = logprobs.reshape(-1), actions.reshape(-1), dones.reshape(-1)
    b_advantages, b_returns, b_values = advantages.reshape(-1), returns.reshape(-1), values.reshape(-1)
    b_dones_host = dones_np.reshape(-1)
    envinds = np.arange(num_envs)
    flatinds = np.arange(batch_size).reshape(num_steps, num_envs)

    # the two LSTM paths give the same outputs (checked once, first minibatch)
    with torch.no_grad():
        mb = flatinds[:, envinds[:envsperbatch]].ravel()
        st0 = (initial_lstm_state[0][:, :envsperbatch], initial_lstm_state[1][:, :envsperbatch])
        a = agent.get_states(b_obs[mb], st0, b_dones[mb])[0]
        b = agent.get_states_packed(b_obs[mb], st0, b_dones_host[mb])[0]
        max_diff = float((a - b).abs().max())
    resets = int(dones_np.sum())

    st = {"clipfracs": torch.zeros((), device=dev), "n_clip": 0, "log": None, "reads": 0, "order": None}

    def step(i):
        k = i % (update_epochs * num_minibatches)
        if k % num_minibatches == 0:
            np.random.shuffle(envinds)
        start = (k % num_minibatches) * envsperbatch
        mbenvinds = envinds[start:start + envsperbatch]
        mb_inds = flatinds[:, mbenvinds].ravel()  # be really careful about the index
        _, newlogprob, entropy, newvalue, _ = agent.get_action_and_value(
            b_obs[mb_inds],
            (initial_lstm_state[0][:, mbenvinds], initial_lstm_state[1][:, mbenvinds]),
            b_dones[mb_inds],
            b_actions.long()[mb_inds],
            done_host=b_dones_host[mb_inds] if args.fix else None,
        )
        logratio = newlogprob - b_logprobs[mb_inds]
        ratio = logratio.exp()
        with torch.no_grad():
            approx_kl = ((ratio - 1) - logratio).mean()
            st["clipfracs"] += ((ratio - 1.0).abs() > clip_coef).float().mean()
            st["n_clip"] += 1
        mb_advantages = b_advantages[mb_inds]
        mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)
        pg_loss1 = -mb_advantages * ratio
        pg_loss2 = -mb_advantages * torch.clamp(ratio, 1 - clip_coef, 1 + clip_coef)
        pg_loss = torch.max(pg_loss1, pg_loss2).mean()
        newvalue = newvalue.view(-1)
        v_loss_unclipped = (newvalue - b_returns[mb_inds]) ** 2
        v_clipped = b_values[mb_inds] + torch.clamp(newvalue - b_values[mb_inds], -clip_coef, clip_coef)
        v_loss_clipped = (v_clipped - b_returns[mb_inds]) ** 2
        v_loss = 0.5 * torch.max(v_loss_unclipped, v_loss_clipped).mean()
        entropy_loss = entropy.mean()
        loss = pg_loss - ent_coef * entropy_loss + v_loss * vf_coef
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(agent.parameters(), max_grad_norm)
        optimizer.step()
        if k == update_epochs * num_minibatches - 1:  # end of an update: CleanRL's per-iteration logging
            st["log"] = {"clipfrac": round(st["clipfracs"].item() / st["n_clip"], 4),
                         "approx_kl": round(float(approx_kl), 5), "value_loss": round(float(v_loss), 4)}
            st["clipfracs"].zero_()
            st["n_clip"] = 0
            st["reads"] += 1

    cc.run("c10_torch_cleanrl_ppo_lstm_done_mask_loop", args, step, envsperbatch * num_steps,
           extra=lambda: {"lstm": "packed segments, one call" if args.fix else "stepped per time step",
                          "envs": num_envs, "steps_per_rollout": num_steps, "frames_per_minibatch": envsperbatch * num_steps,
                          "resets_in_rollout": resets, "paths_max_abs_diff": round(max_diff, 6),
                          "params_m": round(sum(p.numel() for p in agent.parameters()) / 1e6, 3),
                          "log": st["log"], "log_reads": st["reads"]})


if __name__ == "__main__":
    main()
