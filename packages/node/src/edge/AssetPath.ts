/**
 * The bundle files that may answer a request path, in order: `/` and `/docs/` serve their `index.html`, `/about`
 * also tries `about.html` and `about/index.html`. None when the path cannot name a file (`..`, NUL, bad escapes).
 */
export const assetCandidates = (urlPath: string): ReadonlyArray<string> | undefined => {
  let path: string
  try {
    path = decodeURIComponent(urlPath.split("?")[0] ?? "/")
  } catch {
    return undefined
  }
  if (!path.startsWith("/") || path.includes("\0") || path.includes("\\")) return undefined
  const segments = path.split("/").slice(1)
  if (segments.some((segment) => segment === ".." || segment === ".")) return undefined
  const relative = segments.join("/")
  if (relative === "" || relative.endsWith("/")) return [`assets/${relative}index.html`]
  return [`assets/${relative}`, `assets/${relative}.html`, `assets/${relative}/index.html`]
}

const types: Record<string, string> = {
  html: "text/html; charset=utf-8",
  htm: "text/html; charset=utf-8",
  css: "text/css; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  mjs: "text/javascript; charset=utf-8",
  json: "application/json",
  map: "application/json",
  txt: "text/plain; charset=utf-8",
  xml: "application/xml",
  svg: "image/svg+xml",
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  avif: "image/avif",
  ico: "image/x-icon",
  woff: "font/woff",
  woff2: "font/woff2",
  ttf: "font/ttf",
  otf: "font/otf",
  wasm: "application/wasm",
  pdf: "application/pdf",
  mp4: "video/mp4",
  webm: "video/webm",
  mp3: "audio/mpeg",
  webmanifest: "application/manifest+json"
}

/** The Content-Type of a bundle file by its extension; unknown ones are served as bytes. */
export const contentTypeOf = (path: string): string => {
  const dot = path.lastIndexOf(".")
  const slash = path.lastIndexOf("/")
  const extension = dot > slash ? path.slice(dot + 1).toLowerCase() : ""
  return types[extension] ?? "application/octet-stream"
}
