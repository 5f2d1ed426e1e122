// Following a turn: while the reader is at the bottom of the transcript, whatever the
// agent adds keeps it there; once they scroll up to read, nothing yanks them back, and a
// "Jump to latest" button appears, which follows again (as does scrolling back down).
import { $ } from "./dom.js";

const BOTTOM_SLACK_PX = 48; // this close to the end still counts as reading the newest

export class Follower {
  constructor(log = $("log"), jump = $("jump")) {
    this.log = log;
    this.jump = jump;
    this.following = true;
    this.lastTop = log.scrollTop;
    // Only a person scrolling up stops following. Ours only ever goes down, but its scroll
    // event comes a frame later: the log may have grown shorter meanwhile (the composer, a
    // line pinned below it), and reading "not at the bottom" then is not the reader leaving.
    log.addEventListener("scroll", () => this.scrolled());
    jump.addEventListener("click", () => this.follow());
    // Text, tools and questions all arrive as changes below the log.
    new MutationObserver(() => this.grew()).observe(log, {
      childList: true,
      subtree: true,
      characterData: true,
    });
    // So does the log growing shorter: a question pinned below it, a phone's keyboard.
    new ResizeObserver(() => this.grew()).observe(log);
  }

  atBottom() {
    const { scrollHeight, scrollTop, clientHeight } = this.log;
    return scrollHeight - scrollTop - clientHeight <= BOTTOM_SLACK_PX;
  }

  scrolled() {
    const top = this.log.scrollTop;
    const wentUp = top < this.lastTop;
    this.lastTop = top;
    if (this.atBottom()) this.following = true;
    else if (wentUp) this.following = false;
    else if (this.following) this.toEnd(); // the log changed shape under our own scroll
    this.jump.hidden = this.following;
  }

  grew() {
    // A person's scroll up whose event has not come yet (a frame later) is theirs all the
    // same: the page changing meanwhile (a countdown's tick) must not undo it.
    if (this.log.scrollTop < this.lastTop && !this.atBottom()) this.following = false;
    if (this.following) this.toEnd();
    else this.jump.hidden = this.atBottom();
  }

  // Follow again: the reader asked (the button), sent a prompt, or opened a session.
  follow() {
    this.following = true;
    this.toEnd();
  }

  toEnd() {
    this.log.scrollTop = this.log.scrollHeight;
    this.lastTop = this.log.scrollTop;
    this.jump.hidden = true;
  }
}
