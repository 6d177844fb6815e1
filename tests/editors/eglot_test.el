;;; eglot_test.el --- pt2lsp through Emacs's eglot, headless -*- lexical-binding: t -*-

;; Run by tests/editors/run.sh as
;;   emacs -q --batch -l eglot_test.el
;; with PT2LSP_BIN (the server), PT2LSP_FILE (a model with a PT101 on line PT2LSP_LINE, 1-based).
;; It starts eglot on the file, waits for the PT101 diagnostic, asks for the quick fixes on its
;; range, applies "Ignore PT101 on this line", and waits for the diagnostic to go.
;; Exit status 0 on success; any failure prints why and exits 1.

(require 'eglot)
(require 'python)
(require 'flymake)

(defvar pt2lsp-bin (getenv "PT2LSP_BIN"))
(defvar pt2lsp-file (getenv "PT2LSP_FILE"))
(defvar pt2lsp-line (string-to-number (getenv "PT2LSP_LINE")))

(defun pt2lsp-fail (format-string &rest args)
  (princ (concat "eglot test FAILED: " (apply #'format format-string args) "\n")
         #'external-debugging-output)
  (kill-emacs 1))

(defun pt2lsp-log (format-string &rest args)
  (princ (concat (apply #'format format-string args) "\n") #'external-debugging-output))

(defun pt2lsp-diagnostics ()
  "The PT codes flymake holds for the buffer, as (LINE . MESSAGE)."
  ;; Diagnostics that arrived before flymake asked are held by eglot until flymake's next run.
  (flymake-start)
  (accept-process-output nil 0.05)
  (mapcar (lambda (diag)
            (cons (line-number-at-pos (flymake-diagnostic-beg diag))
                  (flymake-diagnostic-text diag)))
          (flymake-diagnostics)))

(defun pt2lsp-wait (predicate what &optional seconds)
  "Wait up to SECONDS for PREDICATE, serving the server's messages meanwhile."
  (let ((deadline (+ (float-time) (or seconds 60))))
    (while (and (not (funcall predicate)) (< (float-time) deadline))
      (accept-process-output nil 0.1))
    (unless (funcall predicate)
      (pt2lsp-fail "timed out waiting for %s; diagnostics: %S" what (pt2lsp-diagnostics)))))

(defun pt2lsp-pt101-on-line-p ()
  (cl-some (lambda (entry)
             (and (= (car entry) pt2lsp-line)
                  (string-match-p "PT101" (cdr entry))))
           (pt2lsp-diagnostics)))

(setq eglot-server-programs `((python-mode ,pt2lsp-bin "serve")))
(setq eglot-sync-connect 30)
(setq eglot-events-buffer-size 0)

(find-file pt2lsp-file)
(python-mode)
;; The project is the directory of pyproject.toml above the file (no VCS in the test tree);
;; the rest of the contact is what `M-x eglot' would guess from `eglot-server-programs'.
(let ((root (locate-dominating-file pt2lsp-file "pyproject.toml")))
  (setq-local project-find-functions (list (lambda (_dir) (cons 'transient root))))
  (apply #'eglot (eglot--guess-contact)))
(unless (eglot-current-server)
  (pt2lsp-fail "eglot did not connect to %s" pt2lsp-bin))
(pt2lsp-log "eglot: connected to %s" pt2lsp-bin)

(pt2lsp-wait #'pt2lsp-pt101-on-line-p (format "PT101 on line %d" pt2lsp-line))
(pt2lsp-log "eglot: PT101 on line %d" pt2lsp-line)

;; The quick fixes on the diagnostic's own range, as `M-x eglot-code-actions' asks for them.
(let* ((diag (cl-find-if (lambda (d) (string-match-p "PT101" (flymake-diagnostic-text d)))
                         (flymake-diagnostics)))
       (actions (eglot-code-actions (flymake-diagnostic-beg diag)
                                    (flymake-diagnostic-end diag) "quickfix"))
       (titles (mapcar (lambda (action) (plist-get action :title)) actions))
       (ignore (cl-find-if (lambda (action)
                             (string-match-p "Ignore PT101" (plist-get action :title)))
                           actions)))
  (pt2lsp-log "eglot: %d quick fixes: %S" (length actions) titles)
  (unless ignore
    (pt2lsp-fail "no \"Ignore PT101 on this line\" among %S" titles))
  (eglot--apply-workspace-edit (plist-get ignore :edit)))

(save-excursion
  (goto-char (point-min))
  (forward-line (1- pt2lsp-line))
  (let ((line (buffer-substring (line-beginning-position) (line-end-position))))
    (unless (string-match-p "# pt2lsp: ignore\\[PT101\\]" line)
      (pt2lsp-fail "the fix did not edit line %d: %S" pt2lsp-line line))))
(pt2lsp-log "eglot: fix applied")
;; eglot sends the change from an idle timer, and a batch Emacs is never idle.
(eglot--signal-textDocument/didChange)

(pt2lsp-wait (lambda () (not (pt2lsp-pt101-on-line-p))) "PT101 to go after the fix")
(pt2lsp-log "eglot: PT101 gone")

(eglot-shutdown (eglot-current-server))
(kill-emacs 0)
;;; eglot_test.el ends here
