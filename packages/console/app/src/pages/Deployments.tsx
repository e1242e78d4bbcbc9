import { DeploymentsApi } from "@hostplane/api/deployments/DeploymentsApi"
import { useState } from "preact/hooks"
import { clientOf } from "../api.ts"
import { type DeploymentRow, DeploymentTable } from "../deploys.tsx"
import { Empty, ErrorNote, Loaded, useAction, useLoad, useRole } from "../ui.tsx"

const api = clientOf(DeploymentsApi)

export default function Deployments({ params }: { readonly params: Record<string, string> }) {
  const org = params["org"]!
  const project = params["project"]!
  const ref = { orgSlug: org, projectName: project }
  const { can } = useRole(org)
  const first = useLoad(() => api().deployments.list({ params: ref, query: {} }), [org, project], 10_000)
  const [older, setOlder] = useState<{ items: ReadonlyArray<DeploymentRow>; cursor: string | null } | undefined>(
    undefined
  )
  const more = useAction()
  return (
    <>
      <h1>Deployments</h1>
      <Loaded data={first.data} problem={first.problem}>
        {(page) => {
          const items = [...page.items, ...(older?.items ?? [])]
          const cursor = older === undefined ? page.nextCursor : older.cursor
          return items.length === 0 ? (
            <Empty>
              <p>No deployment yet. Deploy a folder with the CLI:</p>
              <pre>
                hostplane deploy ./site --org {org} --project {project}
              </pre>
            </Empty>
          ) : (
            <>
              <DeploymentTable
                org={org}
                project={project}
                items={items}
                canRollback={can("member")}
                client={api}
                done={() => {
                  setOlder(undefined)
                  void first.reload()
                }}
              />
              {cursor !== null && (
                <button
                  type="button"
                  class="secondary"
                  disabled={more.busy}
                  onClick={() =>
                    void more
                      .run(() => api().deployments.list({ params: ref, query: { cursor } }))
                      .then((next) => {
                        if (next !== undefined)
                          setOlder({ items: [...(older?.items ?? []), ...next.items], cursor: next.nextCursor })
                      })
                  }
                >
                  Older deployments
                </button>
              )}
              <ErrorNote problem={more.problem} />
            </>
          )
        }}
      </Loaded>
    </>
  )
}
