import { Api, groups } from "@hostplane/api"
import { describe, expect, it } from "vitest"
import { Api as ServedApi, areas } from "../src/index.ts"

describe("the server implements @hostplane/api", () => {
  it("the areas serve exactly the API package's groups, the same objects in the same order", () => {
    const served = areas.flatMap((area) => area.groups as ReadonlyArray<unknown>)
    expect(served.length).toBe(groups.length)
    served.forEach((group, i) => expect(group).toBe(groups[i]))
  })

  it("the API the server exports is the package's", () => {
    expect(ServedApi).toBe(Api)
    expect(Object.keys(Api.groups)).toEqual(groups.map((group) => group.identifier))
  })
})
