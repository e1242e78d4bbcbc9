import { ApiWithDevAuth, areas } from "@hostplane/http"
import { OpenApi } from "effect/http-api"
import { expect, it } from "vitest"

/** Every route the areas declare, each spelled as the spec spells it (spec 4.1-4.5 and 4.11 so far). */
const specRoutes = areas.flatMap((area) => area.routes)
it("the API serves exactly the routes of spec 4.1-4.5 and 4.11, with the spec's paths and methods", () => {
  const paths = OpenApi.fromApi(ApiWithDevAuth).paths as Record<string, Record<string, unknown>>
  const served = Object.entries(paths).flatMap(([path, operations]) =>
    Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`)
  )
  expect([...served].sort()).toEqual([...specRoutes].sort())
})

it("no two areas declare the same route", () => {
  expect(new Set(specRoutes).size).toBe(specRoutes.length)
})
