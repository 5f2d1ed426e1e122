// The agent and model pickers: agents are the gateway's models without a slash; an agent's
// own models (its `model` config option, listed as `agent/model`) fill the second picker.
import { api } from "./api.js";
import { $, el } from "./dom.js";

const DEFAULT = ""; // the agent's own default model

export class ModelPicker {
  constructor(onAgentChange) {
    this.models = new Map(); // agent -> its own model ids
    $("agent").addEventListener("change", () => {
      this.fillModels();
      onAgentChange();
    });
  }

  async load() {
    const listing = await api("/v1/models");
    this.models = new Map();
    for (const entry of listing.data) {
      const [agent, ...rest] = entry.id.split("/");
      if (!this.models.has(agent)) this.models.set(agent, []);
      if (rest.length) this.models.get(agent).push(rest.join("/"));
    }
    const [agent, model] = [$("agent").value, $("model").value];
    $("agent").replaceChildren(...[...this.models.keys()].map((a) => option(a, a)));
    if (this.models.has(agent)) $("agent").value = agent;
    this.fillModels();
    if ([...$("model").options].some((o) => o.value === model)) $("model").value = model;
  }

  fillModels() {
    const own = this.models.get($("agent").value) || [];
    const select = $("model");
    select.replaceChildren(option(DEFAULT, "default model"), ...own.map((m) => option(m, m)));
    select.disabled = own.length === 0;
  }

  known() {
    return (this.models.get($("agent").value) || []).length > 0;
  }

  setAgent(agent) {
    if (!this.models.has(agent) || $("agent").value === agent) return;
    $("agent").value = agent;
    this.fillModels();
  }

  // What a task names: `agent`, or `agent/model` for one of its own.
  choice() {
    const model = $("model").value;
    return model ? `${$("agent").value}/${model}` : $("agent").value;
  }
}

function option(value, label) {
  const node = el("option", "", label);
  node.value = value; // explicit, so the option can be found by its value
  return node;
}
