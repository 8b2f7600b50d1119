/** A server the load generators drive, and the requests each connection cycles through. */
export interface Target {
  url: string;
  /**
   * Other replicas of the same server (e.g. a second gateway, as the chart runs two): the connections are spread over
   * url and these, as a Service spreads them over its pods.
   */
  replicas?: readonly string[];
  /** Requests each connection cycles through (path and headers), so that many callers and rows are exercised. */
  requests: { path: string; headers?: Record<string, string> }[];
}
