// A process of processes.test.ts that stays until it is told to stop, and never gets ready.
setInterval(() => {}, 60_000);
process.on('SIGTERM', () => process.exit(0));
