// The key's daily budgets and what it spent today (`GET /v1/keys/me`): one line in the
// sidebar, read when the page opens and again after each turn (a turn is charged as it
// ends). A key without a budget shows nothing: its turns are not counted.
import { api } from "./api.js";
import { $ } from "./dom.js";
import { tokens } from "./words.js";

function dollars(amount) {
  return "$" + amount.toFixed(amount < 1 ? 4 : 2);
}

export async function showBudget() {
  const line = $("budget");
  const me = await api("/v1/keys/me").catch(() => null);
  if (!me || !me.today) {
    line.hidden = true;
    return;
  }
  const { budgets, today } = me;
  const parts = [];
  let spent = false;
  if (budgets.tokens_per_day != null) {
    parts.push(`${tokens(today.tokens)} / ${tokens(budgets.tokens_per_day)} tokens`);
    spent ||= today.tokens >= budgets.tokens_per_day;
  }
  if (budgets.usd_per_day != null) {
    parts.push(`${dollars(today.usd)} / ${dollars(budgets.usd_per_day)}`);
    spent ||= today.usd >= budgets.usd_per_day;
  }
  line.textContent = `Today: ${parts.join(" · ")}`;
  const hours = Math.ceil(today.resets_in_seconds / 3600);
  line.title = spent
    ? `This key's budget for today is spent; it starts over at midnight UTC (in about ${hours} h).`
    : `This key's spend today (UTC) against its daily budget; it starts over in about ${hours} h.`;
  line.dataset.spent = spent ? "yes" : "no";
  line.hidden = false;
}
