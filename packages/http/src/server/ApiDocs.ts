import { Effect } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { type HttpApi, OpenApi } from "effect/http-api"
import { readFile } from "node:fs/promises"
import { createRequire } from "node:module"
import * as Path from "node:path"

/**
 * Scalar's browser script as Effect ships it: a module whose only export is the script as one string literal. It is
 * not in Effect's exports map, so it is found beside Effect's package.json (the pinned version's layout).
 */
const scalarModule = () =>
  Path.join(
    Path.dirname(createRequire(import.meta.url).resolve("effect/package.json")),
    "dist/http-api/internal/httpApiScalar.js"
  )

/** The script, read from the module's text at each request: importing it would keep 12 MiB (source and value) for good. */
const scalarScript = Effect.promise(async () => {
  const text = await readFile(scalarModule(), "utf8")
  const start = text.indexOf('"', text.indexOf("export const javascript"))
  return JSON.parse(text.slice(start, text.lastIndexOf('"') + 1)) as string
})

/** JSON inside a `<script>` element: no `</script>` and no line terminators JavaScript reads as line breaks. */
const scriptJson = (value: unknown) =>
  JSON.stringify(value)
    .replace(/</g, "\\u003c")
    .replace(/[\u2028\u2029]/g, (c) => (c === "\u2028" ? "\\u2028" : "\\u2029"))

const text = (value: string) => value.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
const attribute = (value: string) => text(value).replace(/"/g, "&quot;").replace(/'/g, "&#39;")

/**
 * `GET <path>`: the API's reference page, Scalar rendering the OpenAPI document (Effect's `HttpApiScalar` page). Scalar's
 * 6 MiB script is read when the page is asked for and dropped once sent, so a server whose docs nobody reads never
 * holds it.
 */
export const apiDocs = (
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  api: HttpApi.HttpApi<string, any>,
  path: HttpRouter.PathInput
) => {
  let document: { readonly title: string; readonly description: string | undefined; readonly json: string } | undefined
  const documentOf = () => {
    if (document === undefined) {
      const spec = OpenApi.fromApi(api)
      document = { title: spec.info.title, description: spec.info.description, json: scriptJson(spec) }
    }
    return document
  }
  return HttpRouter.add(
    "GET",
    path,
    Effect.map(scalarScript, (script) => {
      const { title, description, json } = documentOf()
      const described =
        description === undefined || description === ""
          ? ""
          : `<meta name="description" content="${attribute(description)}"/>
    <meta name="og:description" content="${attribute(description)}"/>`
      return HttpServerResponse.html(`<!doctype html>
<html>
  <head>
    <meta charset="utf-8" />
    <title>${text(title)}</title>
    ${described}
    <meta name="viewport" content="width=device-width, initial-scale=1" />
  </head>
  <body>
    <div id="api-reference-container"></div>
    <script>${script}</script>
    <script>
      window.Scalar.createApiReference(document.getElementById('api-reference-container'), {
        ...${scriptJson({ _integration: "html" })},
        content: ${json}
      })
    </script>
  </body>
</html>`)
    })
  )
}
