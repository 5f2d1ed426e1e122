// A task's stream over a WebSocket: stored frames first, then live ones; a dropped stream
// is picked up again after the last frame seen (`after_seq`).
import { api, subprotocols } from "./api.js";

const RECONNECT_MS = 500; // wait before opening a dropped stream again

export class TaskStream {
  constructor(taskId, view, { afterSeq = 0, onEnd = () => {}, onStatus = () => {} } = {}) {
    this.taskId = taskId;
    this.view = view;
    this.last = afterSeq;
    this.onEnd = onEnd;
    this.onStatus = onStatus;
    this.ws = null;
    this.closed = false;
    this.open();
  }

  open() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const query = new URLSearchParams({ after_seq: String(this.last) });
    const url = `${scheme}://${location.host}/v1/tasks/${this.taskId}/stream?${query}`;
    const ws = new WebSocket(url, subprotocols());
    let opened = false;
    this.ws = ws;
    ws.onopen = () => { opened = true; };
    ws.onmessage = (message) => {
      const frame = JSON.parse(message.data);
      if (frame.type === "ping" || frame.type === "error" || frame.seq <= this.last) return;
      this.last = frame.seq;
      this.view.frame(frame);
    };
    ws.onclose = () => this.dropped(ws, opened);
  }

  async dropped(ws, opened) {
    if (this.ws !== ws || this.closed) return;
    if (this.view.ended) {
      this.closed = true;
      this.onEnd();
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
        this.onEnd();
        return;
      }
    }
    setTimeout(() => this.open(), RECONNECT_MS);
  }

  send(frame) {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(frame));
  }

  close() {
    this.closed = true;
    if (this.ws) this.ws.close();
  }
}
