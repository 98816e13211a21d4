"""`manage.py workspace create SLUG [--name NAME] | list | add-member SLUG USER`."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.db.models import Count

from rag.models import Workspace
from rag.workspaces import WorkspaceError, workspace_create, workspace_member_add


class Command(BaseCommand):
    help = "Create and list workspaces, and add members to them."

    def add_arguments(self, parser) -> None:
        actions = parser.add_subparsers(dest="action", required=True, metavar="create|list|add-member")
        create = actions.add_parser("create", help="create an empty workspace")
        create.add_argument("slug")
        create.add_argument("--name", default="", help="display name (default: the slug, capitalised)")
        actions.add_parser("list", help="every workspace with its members and documents")
        add_member = actions.add_parser("add-member", help="give a user access to a workspace")
        add_member.add_argument("slug")
        add_member.add_argument("user", help="user name")

    def handle(self, *args, action: str, **options) -> None:
        try:
            if action == "create":
                workspace = workspace_create(slug=options["slug"], name=options["name"])
                self.stdout.write(f"created workspace {workspace.slug} ({workspace.name})")
            elif action == "add-member":
                workspace = self._workspace(options["slug"])
                user = workspace_member_add(workspace=workspace, username=options["user"])
                self.stdout.write(f"{user.get_username()} is a member of {workspace.slug}")
            else:
                self._list()
        except WorkspaceError as exc:
            raise CommandError(str(exc)) from None

    @staticmethod
    def _workspace(slug: str) -> Workspace:
        try:
            return Workspace.objects.get(slug=slug)
        except Workspace.DoesNotExist:
            raise CommandError(f"no workspace with slug {slug!r}; `python manage.py workspace list` shows them") from None

    def _list(self) -> None:
        workspaces = Workspace.objects.annotate(
            member_count=Count("members", distinct=True), document_count=Count("documents", distinct=True),
        ).order_by("slug")
        if not workspaces:
            self.stdout.write("no workspaces; `python manage.py workspace create SLUG` makes one")
            return
        self.stdout.write(f"{'slug':<20} {'members':>7} {'documents':>9}  name")
        for workspace in workspaces:
            self.stdout.write(f"{workspace.slug:<20} {workspace.member_count:>7} {workspace.document_count:>9}  "
                              f"{workspace.name}")
