/**
 * The uploads demo page: a drop zone (and a file picker), one row per file with its progress, a cancel
 * button, and — when it fails — the error's code and message (which carries its hint). Bundled by
 * esbuild (`bundle.ts`) from `@svc/blob/react` only: what a real page would ship.
 *
 * `window.svcBlob` exposes the client for scripted runs (the browser tests and the benchmark).
 */
import { type DragEvent, useState } from "react"
import { createRoot } from "react-dom/client"
import { upload, type UploadRecord, useUploads } from "../react/index.ts"

const ROUTE = "/api/upload/files"

const percent = (record: UploadRecord) => `${Math.floor(record.progress.percentage)}%`

const Row = ({ record }: { readonly record: UploadRecord }) => (
  <li className="upload" data-name={record.name} data-status={record.status} data-code={record.error?.code ?? ""}>
    <span className="name">{record.name}</span> <span className="status">{record.status}</span>{" "}
    <progress max={100} value={record.progress.percentage} /> <span className="percent">{percent(record)}</span>
    {record.status === "uploading" && (
      <button type="button" className="cancel" onClick={record.cancel}>
        Cancel
      </button>
    )}
    {record.result !== undefined && <div className="path">{record.result.path}</div>}
    {record.error !== undefined && (
      <div className="error" role="alert">
        {/* the message ends with the hint, when there is one (spec 3B message rule 1): shown once */}
        <code className="error-code">{record.error.code}</code> <span className="error-message">{record.error.message}</span>
      </div>
    )}
  </li>
)

const App = () => {
  const { uploads, add, clearFinished } = useUploads(ROUTE)
  const [over, setOver] = useState(false)
  const onDrop = (event: DragEvent) => {
    event.preventDefault()
    setOver(false)
    add(event.dataTransfer.files)
  }
  return (
    <main>
      <h1>Uploads</h1>
      <div
        className={over ? "dropzone over" : "dropzone"}
        onDragOver={(event) => {
          event.preventDefault()
          setOver(true)
        }}
        onDragLeave={() => setOver(false)}
        onDrop={onDrop}
      >
        <p>Drop files here, or</p>
        <input
          type="file"
          multiple
          onChange={(event) => {
            if (event.target.files !== null) add(event.target.files)
            event.target.value = ""
          }}
        />
      </div>
      <ul className="uploads">
        {uploads.map((record) => <Row key={record.id} record={record} />)}
      </ul>
      {uploads.length > 0 && (
        <button type="button" className="clear" onClick={clearFinished}>
          Clear finished
        </button>
      )}
    </main>
  )
}

;(globalThis as { svcBlob?: unknown }).svcBlob = { upload, route: ROUTE }
createRoot(document.getElementById("root")!).render(<App />)
