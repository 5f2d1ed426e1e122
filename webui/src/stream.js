// A task's view over a WebSocket: the items each of its frames changed, from its first
// frame, then live ones (`WS /v1/tasks/{id}/view`). They are upserts by id, so a dropped
// stream is simply opened again and drawn again. Words for the running turn go up the same
// socket (`steer()`, gateway/steer.py); its answers come back in the order they were sent.
import { api, subprotocols } from "./api.js";

const RECONNECT_MS = 500; // wait before opening a dropped stream again

export class TaskStream {
  constructor(taskId, conversation, { onEnd = () => {}, onStatus = () => {} } = {}) {
    this.taskId = taskId;
    this.conversation = conversation;
    this.view = conversation.turn(taskId);
    this.onEnd = onEnd;
    this.onStatus = onStatus;
    this.ws = null;
    this.closed = false;
    this.finished = false; // onEnd has been called
    this.steering = []; // {resolve, reject} of each steer frame not answered yet, in order
    this.open();
  }

  open() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const url = `${scheme}://${location.host}/v1/tasks/${this.taskId}/view`;
    const ws = new WebSocket(url, subprotocols());
    let opened = false;
    this.ws = ws;
    ws.onopen = () => { opened = true; };
    ws.onmessage = (message) => {
      const frame = JSON.parse(message.data);
      if (frame.type === "view") this.conversation.render(frame.items);
      else if (frame.type === "steered") this.answered(null, frame.outcome);
      else if (frame.type === "error" && "code" in frame) this.answered(frame); // a steer's
      // The page is free the moment the turn is drawn ended, not once the server has closed
      // the stream after it: a prompt sent in between would be dropped. Frames still coming
      // on this stream are drawn all the same.
      if (this.view.ended) this.finish();
    };
    ws.onclose = () => this.dropped(ws, opened);
  }

  async dropped(ws, opened) {
    if (this.ws !== ws || this.closed) return;
    // Unanswered words are not lost: they are queued as the next prompt (main.js).
    for (const waiting of this.steering.splice(0)) waiting.reject({ code: "task_not_running" });
    if (this.view.ended) {
      this.finish();
      this.closed = true;
      return;
    }
    this.onStatus("reconnecting…");
    if (!opened) {
      // Refused: ask over HTTP, which says why (and asks for a key when that was it).
      try {
        await api(`/v1/tasks/${this.taskId}`);
      } catch (error) {
        this.view.end(error.message, "error");
        this.closed = true;
        this.finish();
        return;
      }
    }
    setTimeout(() => this.open(), RECONNECT_MS);
  }

  finish() {
    if (this.finished) return;
    this.finished = true;
    this.onEnd();
  }

  // Words for the running turn (`{"type": "steer"}`): resolves with the outcome, rejects
  // with the error frame (its `code`: steering_unsupported, task_not_running, …). Words
  // typed while the socket still opens (a busy gateway looks the task up first) go once it
  // is open, in the order typed; if it drops instead, `dropped` rejects them.
  steer(text) {
    const ws = this.ws;
    if (!ws || ws.readyState > WebSocket.OPEN) {
      return Promise.reject({ code: "task_not_running", message: "not connected" });
    }
    return new Promise((resolve, reject) => {
      this.steering.push({ resolve, reject });
      const frame = JSON.stringify({ type: "steer", text });
      if (ws.readyState === WebSocket.OPEN) ws.send(frame);
      else ws.addEventListener("open", () => ws.send(frame), { once: true });
    });
  }

  answered(error, outcome) {
    const waiting = this.steering.shift();
    if (!waiting) return;
    if (error) waiting.reject(error);
    else waiting.resolve(outcome);
  }

  // A frame for the task (`cancel`): sent now, or once the socket opens.
  send(frame) {
    const ws = this.ws;
    if (!ws || ws.readyState > WebSocket.OPEN) return;
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(frame));
    else ws.addEventListener("open", () => ws.send(JSON.stringify(frame)), { once: true });
  }

  close() {
    this.closed = true;
    for (const waiting of this.steering.splice(0)) waiting.reject({ code: "task_not_running" });
    if (this.ws) this.ws.close();
  }
}
