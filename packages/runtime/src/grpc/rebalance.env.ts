// Imported first by rebalance.test.ts: grpc-js reads it when it loads. With it, a `dns://<server>/<name>` target
// asks that DNS server (the test's own, on loopback) rather than the system's resolver.
process.env.GRPC_NODE_USE_ALTERNATIVE_RESOLVER = 'true';
