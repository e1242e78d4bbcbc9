import * as Path from "node:path"
import { expect } from "vitest"
import { commitFiles, gitOk, scratch, withToken, workingCopy } from "./GitClient.ts"
import type { Session, Suite } from "./TestServer.ts"

/** Repos of a suite's server: made through the API, filled through the real `git` over smart HTTP. */
export const gitRepos = (suite: Suite) => {
  const { api } = suite
  const reposOf = (slug: string, project: string) => `/v1/orgs/${slug}/projects/${project}/repos`
  const httpUrl = (slug: string, project: string, repo: string) =>
    `${suite.server.url}/git/${slug}/${project}/${repo}.git`
  const tokenOf = async (session: Session) => {
    const reply = await api.post("/v1/me/tokens", { name: "git" }, { token: session.token })
    expect(reply.status).toBe(201)
    return reply.body.token as string
  }
  const createRepo = async (slug: string, project: string, body: Record<string, unknown> = {}, session?: Session) => {
    const reply = await api.post(
      reposOf(slug, project),
      { name: "site", ...body },
      { token: (session ?? suite.admin).token }
    )
    expect(reply.status, JSON.stringify(reply.body)).toBe(201)
    return reply.body as { name: string; cloneUrl: string; sshUrl: string; defaultBranch: string }
  }
  /** A project with a repo holding `files` in one commit on `main`, pushed by the suite's admin. */
  const pushedRepo = async (slug: string, files: Record<string, string> = { "README.md": "hello\n" }) => {
    const project = await suite.newProject(slug)
    const repo = await createRepo(slug, project.name)
    const token = await tokenOf(suite.admin)
    const { dir, cleanup } = await scratch()
    const work = await workingCopy(Path.join(dir, "work"), files)
    const url = withToken(httpUrl(slug, project.name, repo.name), token)
    await gitOk(work, ["push", "-q", url, "HEAD:refs/heads/main"])
    const commit = await gitOk(work, ["rev-parse", "HEAD"])
    return {
      project,
      repo,
      token,
      work,
      url,
      commit,
      cleanup,
      dir,
      commitFiles: (f: Record<string, string | Uint8Array>, m: string) => commitFiles(work, f, m)
    }
  }
  return { reposOf, httpUrl, tokenOf, createRepo, pushedRepo }
}
