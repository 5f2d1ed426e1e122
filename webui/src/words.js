// What the page says in words: stop reasons, counts, times, token amounts.

// A normal end says nothing; every other end says what happened, for a person.
const STOP_WORDS = {
  end_turn: null,
  cancelled: "Stopped.",
  max_tokens: "The answer was cut off: the model reached its output limit.",
  max_turn_requests: "Stopped: the agent reached its limit of model requests for one turn.",
  refusal: "The model declined to answer.",
};

export function stopWords(reason) {
  if (reason in STOP_WORDS) return STOP_WORDS[reason];
  return `Stopped (${reason}).`;
}

export function plural(count, one, many = one + "s") {
  return `${count} ${count === 1 ? one : many}`;
}

const MINUTE = 60, HOUR = 3600, DAY = 86400;

// "just now", "5 min ago", "3 h ago", "yesterday", then the date.
export function ago(seconds, now = Date.now() / 1000) {
  const age = Math.max(0, now - seconds);
  if (age < MINUTE) return "just now";
  if (age < HOUR) return `${Math.floor(age / MINUTE)} min ago`;
  if (age < DAY) return `${Math.floor(age / HOUR)} h ago`;
  if (age < 2 * DAY) return "yesterday";
  return new Date(seconds * 1000).toLocaleDateString();
}

export function fullTime(seconds) {
  return new Date(seconds * 1000).toLocaleString();
}

// 950 -> "950", 12_345 -> "12.3k", 1_200_000 -> "1.2M"
export function tokens(n) {
  if (n < 1000) return String(n);
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 10_000 ? 1 : 0)}k`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}

// A turn's token usage as the agent reported it (ACP's Usage): "1.2k tokens in · 56 out",
// then what it read from a cache and spent thinking, when it says.
export function turnUsage(u) {
  const parts = [`${tokens(u.inputTokens || 0)} tokens in`, `${tokens(u.outputTokens || 0)} out`];
  if (u.cachedReadTokens) parts.push(`${tokens(u.cachedReadTokens)} from cache`);
  if (u.thoughtTokens) parts.push(`${tokens(u.thoughtTokens)} thinking`);
  return parts.join(" · ");
}

// Seconds left as m:ss ("1:05"), or that the time is up.
export function countdown(left) {
  if (left <= 0) return "deadline passed";
  const s = Math.ceil(left);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")} left`;
}
