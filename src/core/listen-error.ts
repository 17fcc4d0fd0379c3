// The refusal of a listener that cannot bind (operations.md: "a listener that cannot bind is named"): which listener,
// the address it tried, the variables that set it, and the system's reason.
export function listenError(what: string, vars: string, host: string, port: number, err: unknown): Error {
  const reason = err instanceof Error ? err.message : String(err);
  return new Error(`the ${what} listener cannot listen on ${host}:${port} (${vars}): ${reason}`);
}
