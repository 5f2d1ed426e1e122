// The context meter: how full the session's context window is, from the agent's
// `usage_update` (`used`, `size`, and `cost` when it knows prices).
import { $ } from "./dom.js";
import { tokens } from "./words.js";

const ESTIMATED = "agentao.cn/estimated"; // _meta flag: `used` is an estimate

export function showUsage(u) {
  const box = $("usage");
  if (!u || !u.size) {
    box.hidden = true;
    return;
  }
  const share = Math.min(1, u.used / u.size);
  const approx = u._meta && u._meta[ESTIMATED] ? "≈" : "";
  let text = `${approx}${tokens(u.used)} / ${tokens(u.size)} tokens (${Math.round(share * 100)}%)`;
  if (u.cost && typeof u.cost.amount === "number") {
    text += ` · ${u.cost.amount.toFixed(u.cost.amount < 1 ? 4 : 2)} ${u.cost.currency}`;
  }
  $("usage-meter").value = share;
  $("usage-text").textContent = text;
  box.title = "Context window used by this session";
  box.dataset.level = share > 0.8 ? "high" : share > 0.5 ? "mid" : "low";
  box.hidden = false;
}
