/** Parses a `host:port` listen address (`[::1]:8080`, `0.0.0.0:80`, or a bare port). */
export const parseListen = (value: string): { readonly host: string; readonly port: number } => {
  const match = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(value.trim())
  const bare = /^\d{1,5}$/.test(value.trim())
  const host = bare ? "127.0.0.1" : (match?.[1] ?? match?.[2] ?? "")
  const port = Number(bare ? value.trim() : match?.[3])
  if ((!bare && match === null) || !Number.isInteger(port) || port > 65535) {
    throw new Error(`invalid listen address ${JSON.stringify(value)}: use host:port`)
  }
  return { host: host === "" ? "0.0.0.0" : host, port }
}
