import { ReposApi } from "@hostplane/api/git/GitApi"
import type { Git } from "@hostplane/core"
import { clientOf } from "../api.ts"
import { projectPath } from "../deploys.tsx"
import { RepoNav } from "../repoNav.tsx"
import { enc, Link, useLocation } from "../router.tsx"
import { DangerButton, Empty, ErrorNote, Loaded, useLoad, useRole } from "../ui.tsx"
import { navigate } from "../router.tsx"

const api = clientOf(ReposApi)

export default function Repo({ params }: { readonly params: Record<string, string> }) {
  const org = params["org"]!
  const project = params["project"]!
  const repo = params["repo"]!
  const { query } = useLocation()
  const ref = query.get("ref") ?? ""
  const path = query.get("path") ?? ""
  const blob = query.get("blob") === "1"
  const repoRef = { orgSlug: org, projectName: project, repoName: repo }
  const { can } = useRole(org)
  const info = useLoad(() => api().repos.get({ params: repoRef }), [org, project, repo])
  const refs = useLoad(() => api().repos.refs({ params: repoRef }), [org, project, repo])
  const hasCommits = refs.data !== undefined && JSON.stringify(refs.data).includes('"name"')
  type Listing = { readonly blob: Git.RepoBlob } | { readonly tree: Git.RepoTree } | undefined
  const listing = useLoad<Listing>(
    () =>
      !hasCommits
        ? Promise.resolve(undefined)
        : blob
          ? api()
              .repos.blob({ params: repoRef, query: { ref, path } })
              .then((b): Listing => ({ blob: b }))
          : api()
              .repos.tree({ params: repoRef, query: { ref, path } })
              .then((t): Listing => ({ tree: t })),
    [org, project, repo, ref, path, blob, hasCommits]
  )
  const base = `${projectPath(org, project)}/repos/${enc(repo)}`
  const at = (entryPath: string, isBlob: boolean) =>
    `${base}?ref=${enc(ref)}&path=${enc(entryPath)}${isBlob ? "&blob=1" : ""}`
  return (
    <>
      <h1>
        Repo {repo} {path !== "" && <span class="muted">/ {path}</span>}
      </h1>
      <RepoNav org={org} project={project} repo={repo} />
      <Loaded data={info.data} problem={info.problem}>
        {(data) => (
          <p>
            Clone: <code>{data.cloneUrl}</code> · default branch <code>{data.defaultBranch}</code>
          </p>
        )}
      </Loaded>
      {refs.data !== undefined && !hasCommits && (
        <Empty>This repo is empty: push a branch to it and its files appear here.</Empty>
      )}
      <ErrorNote problem={refs.problem ?? listing.problem} />
      {listing.data !== undefined &&
        ("tree" in listing.data ? (
          <table>
            <thead>
              <tr>
                <th>Name</th>
                <th>Size</th>
              </tr>
            </thead>
            <tbody>
              {listing.data.tree.entries.map((entry) => (
                <tr key={entry.path}>
                  <td>
                    <Link href={at(entry.path, entry.type === "blob")}>
                      {entry.name}
                      {entry.type === "tree" ? "/" : ""}
                    </Link>
                  </td>
                  <td>{entry.size ?? ""}</td>
                </tr>
              ))}
            </tbody>
          </table>
        ) : listing.data.blob.content === null ? (
          <Empty>
            {listing.data.blob.binary ? "A binary file" : "Too large to show"} ({listing.data.blob.size} bytes).
          </Empty>
        ) : (
          <pre>{listing.data.blob.content}</pre>
        ))}
      <h2>Delete this repo</h2>
      <DangerButton
        label="Delete"
        title={`Delete the repo ${repo}?`}
        detail={<p>Every branch and commit of {repo} goes.</p>}
        disabled={!can("admin")}
        action={() => api().repos.remove({ params: repoRef })}
        done={() => navigate(`${projectPath(org, project)}/repos`)}
      />
      <p>
        <Link href={`${projectPath(org, project)}/repos`}>All repos</Link>
      </p>
    </>
  )
}
