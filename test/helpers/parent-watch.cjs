// Preloaded (`node --require`) into an `mta serve` child that a test starts (test/helpers/cli.ts serveChild): the
// child ends when the test process that started it is gone, as it would otherwise run on, orphaned, holding its ports
// and its database (a test process killed, or ended by an uncaught error before its after hooks). Linux gives the
// orphan a new parent (init or a subreaper): once a second the child compares its parent's pid with the one it started
// with, and on a change stops as on SIGTERM (draining), or exits after 10 s if that hangs. Test code only.
/* global process, setInterval, clearInterval, setTimeout */
const parent = process.ppid;
const watch = setInterval(() => {
  if (process.ppid === parent) return;
  clearInterval(watch);
  setTimeout(() => process.exit(1), 10_000).unref();
  process.kill(process.pid, 'SIGTERM');
}, 1000).unref();
